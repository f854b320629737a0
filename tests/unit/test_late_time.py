"""The audit's late-time law (docs/method.md §7.3): the asymptote ``C`` against an independent quadrature, the
population loss and gradient at large ``xi`` against ``C/xi1 + 1/2 F(r)^N``, the late flow against the population
flow and against its quasi-static law."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

N, D = 32, 8
HALF = (D - 1) / 2.0


def density(t: float) -> float:
    """``f``: ``t = 2 B - 1`` with ``B ~ Beta((d-1)/2, (d-1)/2)``, written afresh with scipy.stats."""
    return float(stats.beta.pdf((1.0 + t) / 2.0, HALF, HALF)) / 2.0


def cdf(t: float) -> float:
    return float(stats.beta.cdf((1.0 + t) / 2.0, HALF, HALF))


@pytest.fixture(scope="module")
def C() -> float:
    """``(ln 2 - 1/2) N (N-1) int f^2 F^(N-2)``, each factor by scipy's adaptive quadrature."""
    ties, _ = integrate.quad(lambda x: 1.0 / (1.0 + math.exp(x)) ** 2, 0.0, 50.0, epsabs=1e-14)
    pair, _ = integrate.quad(lambda t: density(t) ** 2 * cdf(t) ** (N - 2), -1.0, 1.0, epsabs=1e-14, epsrel=1e-12)
    return ties * N * (N - 1) * pair


def test_the_ties_constant_is_ln2_minus_half():
    from onenn.theory.reduced.late_time import TIE_CONSTANT

    value, _ = integrate.quad(lambda x: 1.0 / (1.0 + math.exp(x)) ** 2, 0.0, 50.0, epsabs=1e-14)
    assert value == pytest.approx(TIE_CONSTANT, rel=1e-12)


def test_the_asymptote_matches_scipys_quadrature_of_the_beta_density(C):
    from onenn.theory.reduced.late_time import asymptote

    assert asymptote(N, D) == pytest.approx(C, rel=1e-10)


def test_the_asymptote_at_d4_matches_the_circle_law_in_closed_form():
    """At d = 4, ``f(t) = (2/pi) sqrt(1 - t^2)`` and ``F(t) = 1/2 + (t sqrt(1 - t^2) + asin t)/pi``."""
    from onenn.theory.reduced.late_time import asymptote

    def f(t: float) -> float:
        return 2.0 / math.pi * math.sqrt(1.0 - t * t)

    def F(t: float) -> float:
        return 0.5 + (t * math.sqrt(1.0 - t * t) + math.asin(t)) / math.pi

    pair, _ = integrate.quad(lambda t: f(t) ** 2 * F(t) ** 14, -1.0, 1.0, epsabs=1e-14, epsrel=1e-12)
    assert asymptote(16, 4) == pytest.approx((math.log(2.0) - 0.5) * 16 * 15 * pair, rel=1e-9)


#: (xi1, xi2): the audit's population flow at t = 1e20 (its table, rounded), and a point with a large stuck mass
POINTS = [(3.675e6, 3.569e6), (1e5, 8.5e4)]


@pytest.fixture(scope="module")
def q():
    from onenn.theory.reduced.population import quadrature

    return quadrature(N, D, 128, 64, 0)


@pytest.mark.parametrize(("xi1", "xi2"), POINTS)
def test_population_loss_times_xi1_is_the_asymptote_plus_the_stuck_mass(q, C, xi1, xi2):
    """``loss * xi1 - C`` is the stuck mass's ``1/2 F(r)^N xi1``, to 5% of it (the quadrature's error is smaller)."""
    from onenn.theory.reduced.population import population_loss_grad

    stuck = 0.5 * cdf(1.0 - xi2 / xi1) ** N * xi1
    excess = population_loss_grad(xi1, xi2, q).loss * xi1 - C
    assert excess == pytest.approx(stuck, rel=0.05)


@pytest.mark.parametrize(("xi1", "xi2"), POINTS)
def test_population_gradient_is_the_late_losss_gradient(q, C, xi1, xi2):
    """``grad (C/xi1 + 1/2 F(r)^N)`` with ``p = N f F^(N-1)``: ``(-C/xi1^2 + p xi2/(2 xi1^2), -p/(2 xi1))``."""
    from onenn.theory.reduced.population import population_loss_grad

    r = 1.0 - xi2 / xi1
    p = N * density(r) * cdf(r) ** (N - 1)
    value = population_loss_grad(xi1, xi2, q)
    assert value.grad_xi1 == pytest.approx(-C / xi1**2 + 0.5 * p * xi2 / xi1**2, rel=1e-2)
    assert value.grad_xi2 == pytest.approx(-0.5 * p / xi1, rel=1e-2)


def test_the_late_flow_follows_the_population_flow_from_1e12(q):
    """From the audit's point at t = 1e12 to 1e13: xi1 and xi1/xi2 of both flows within 1e-3 (relative)."""
    from onenn.theory.reduced.dynamics import flow_of
    from onenn.theory.reduced.late_time import late_flow
    from onenn.theory.reduced.population import population_loss_grad

    def value(a: float, b: float):
        return population_loss_grad(a, b, q)

    start, times = (7978.0, 6825.0), np.array([1e12, 1e13])
    _, xi1, xi2 = flow_of(value, *start, 1e12, 1e13, D, "BDF", times, 1e-7, 1e-8)[:3]
    late = late_flow(*start, 1e12, np.log10(times), N, D)
    assert 10.0 ** late.log10_xi1.iloc[-1] == pytest.approx(xi1[-1], rel=1e-3)
    assert late.xi_ratio.iloc[-1] == pytest.approx(xi1[-1] / xi2[-1], rel=1e-3)
    assert xi1[-1] / xi2[-1] < start[0] / start[1] - 0.01  # the ratio moved: the check is not of a standstill


def test_the_late_flow_follows_its_quasi_static_law(C):
    """Far out the boundary is quasi-static, ``xi1 p(r) = 2 (1 - r) C / (d + (1 - r)^2)``, and then
    ``xi1^3 = 3 C t / (d + (1 - r)^2)`` (docs/method.md §7.3); ``xi1/xi2`` stays above 1/2 and falls toward it."""
    from onenn.theory.reduced.late_time import late_flow

    late = late_flow(3.675e6, 3.569e6, 1e20, np.array([20.0, 60.0, 100.0, 300.0]), N, D)
    for k in (1, 2, 3):
        r, log_xi1, log_t = late.boundary[k], late.log10_xi1[k] * math.log(10), late.log10_time[k] * math.log(10)
        log_p = math.log(N * density(r)) + (N - 1) * math.log(cdf(r))
        target = 2 * (1 - r) * C / (D + (1 - r) ** 2)
        assert math.exp(log_xi1 + log_p) == pytest.approx(target, rel=1e-2)
        assert math.exp(3 * log_xi1 - log_t) * (D + (1 - r) ** 2) / (3 * C) == pytest.approx(1.0, rel=1e-2)
    assert np.all(late.xi_ratio > 0.5) and np.all(np.diff(late.xi_ratio) < 0)


def test_the_answer_says_not_settled_unless_the_ratio_falls_to_half_from_above():
    from onenn.analysis.audit_pages import answer

    def rows(gaps: list[float]) -> pd.DataFrame:
        return pd.DataFrame({"log10_time": np.arange(len(gaps)) + 20.0, "xi_ratio_minus_half": gaps})

    assert answer(rows([0.5, 0.1, 1e-8])).startswith("ξ1/ξ2 falls to 1/2 from above")
    assert answer(rows([0.5, 0.1, 1e-3])).startswith("Not settled")
    assert answer(rows([0.5, 0.6, 1e-8])).startswith("Not settled")
    assert answer(rows([0.5, -0.1, -0.2])).startswith("Not settled")


def test_a_flow_that_ends_before_the_comparison_starts_says_so(tmp_path):
    """The quick preset's audit ends at t = 1e6: the page says there is nothing to compare, and makes no far rows."""
    import logging

    from onenn.base.io import save_table
    from onenn.jobs.readme import LATE_COLUMNS as COLUMNS
    from onenn.jobs.readme import late_time_job
    from onenn.theory.reduced.late_time import COMPARE_FROM

    times = np.logspace(0, 6, 7)
    table = pd.DataFrame(
        {
            "variant": "sigma=3",
            "source": "population",
            "time": times,
            "xi1": np.linspace(0.1, 80.0, 7),
            "xi2": np.full(7, 3.0),
            "reduced_loss": np.linspace(0.48, 0.02, 7),
            "N": N,
            "d": D,
        }
    )
    path = tmp_path / "audit.parquet"
    save_table(path, table, descriptions={c: c for c in COLUMNS})
    out = tmp_path / "late.md"
    late_time_job(str(path), "config.yaml", str(out), log=logging.getLogger("test"))
    page = out.read_text(encoding="utf-8")
    assert f"ends at t = 1e+06, before t = {COMPARE_FROM:.0e}: nothing to compare" in page
    assert "The late flow alone" not in page


def test_the_far_answer_does_not_move_when_the_solver_tolerance_tightens_a_hundredfold():
    """The late flow alone to 1e3000 (the page's far table): xi1/xi2 - 1/2 at rtol 1e-8, 1e-10 and 1e-12 agrees to
    1e-6 relative, so the far answer is the law's, not the solver's."""
    from onenn.theory.reduced.late_time import late_flow

    decades = np.array([20.0, 40.0, 100.0, 300.0, 1000.0, 3000.0])
    start = (3.674627e6, 3.674627e6 / 1.029672, 1e20)  # about where the population flow ends at sigma = 3
    gaps = [
        late_flow(*start, decades, N, D, rtol=rtol, atol=rtol * 1e-2).xi_ratio.to_numpy() - 0.5
        for rtol in (1e-8, 1e-10, 1e-12)
    ]
    assert np.all(gaps[1] > 0) and np.all(np.diff(gaps[1]) < 0)
    np.testing.assert_allclose(gaps[0], gaps[2], rtol=1e-6)
    np.testing.assert_allclose(gaps[1], gaps[2], rtol=1e-6)


def test_the_boundary_layer_share_is_what_the_layer_would_take_from_xi2s_rate():
    """``-p(r)/(2 xi1)`` (written afresh with scipy.stats) added to the late loss changes ``-dL/dxi2 = p(r)/(2 xi1)``
    by ``-share`` (central differences in ``xi2``); at the audit's point at ``t = 10^12`` it is about 0.6%."""
    from onenn.theory.reduced.late_time import boundary_layer_share

    def p(r: float) -> float:
        return N * density(r) * cdf(r) ** (N - 1)

    def layer(xi1: float, xi2: float) -> float:
        return -0.5 * p(1.0 - xi2 / xi1) / xi1

    for xi1, xi2 in ((7976.27, 7976.27 / 1.168525), (3.675e6, 3.675e6 / 1.03), (500.0, 420.0)):
        h = 1e-4 * xi1
        rate = 0.5 * p(1.0 - xi2 / xi1) / xi1
        change = -(layer(xi1, xi2 + h) - layer(xi1, xi2 - h)) / (2 * h)
        assert change / rate == pytest.approx(-boundary_layer_share(xi1, xi2, N, D), rel=1e-5)
    assert boundary_layer_share(7976.27, 7976.27 / 1.168525, N, D) == pytest.approx(0.0057, abs=1e-4)


def test_the_late_time_page_opens_with_each_variants_verdict_and_answer():
    from onenn.analysis.audit_pages import late_time_page

    comp = pd.DataFrame({"time": [1e12, 1e13], "layer_share": [0.01, 0.001]})
    for q in ("xi1", "xi_ratio", "loss_xi1"):
        comp[q] = comp[f"{q}_late"] = 1.0
        comp[f"{q}_change"] = [1e-4, 2e-3]  # the second is over the tolerance, 1e-3
    far = pd.DataFrame({"log10_time": [20.0, 30.0], "xi_ratio_minus_half": [1e-3, 1e-7], "law": 1.0})
    far = far.assign(xi_ratio=0.5 + far["xi_ratio_minus_half"], one_plus_boundary=1.0, log10_xi1=7.0, loss_xi1=1.48)
    text = late_time_page({"v": (1e20, comp, far)}, 32, 8, 1.48, 1e12)
    top = text.split("\n## ")[0]
    assert "- v: the late flow against the population flow from t = 1e+12: largest relative difference" in top
    assert "NOT within the tolerance" in top and "- v: ξ1/ξ2 falls to 1/2 from above" in top
