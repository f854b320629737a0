"""The convergence proof's inequalities (onenn.theory.inequalities, its page onenn.analysis.inequalities_page): the rate
against finite differences of the loss and against GD's own step, each side typed again from the text, the
Jensen step on prompts computed by hand and in closed form, a lemma where it holds by construction."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from onenn.analysis.inequalities_page import figure, first_in_region, page
from onenn.maths.family import XI_RATIO_BOUND, crossing
from onenn.theory import inequalities as ps
from onenn.theory.audit import AuditSettings, lemma12_a, run_audit
from onenn.theory.inequalities import inequalities_table
from onenn.theory.reduced.dynamics import gradient_descent
from onenn.theory.reduced.loss import loss_grad_prepared, prepare, reduced_loss
from onenn.theory.reduced.population import nodes, quadrature
from onenn.theory.reduced.sampling import sample_inner_products

D, N = 8, 32


@pytest.fixture(scope="module")
def sample():
    return sample_inner_products(4096, N, D, np.random.default_rng(3))


@pytest.mark.parametrize("factor", ps.LOSS_FACTORS)
@pytest.mark.parametrize(("xi1", "xi2"), [(0.5, 3.0), (6.0, 9.0), (40.0, 35.0)])
def test_rate_is_minus_the_finite_difference_gradient_over_d_and_1(sample, factor, xi1, xi2):
    """On a fixed sample: xi_dot = -factor (dL/dxi1 / d, dL/dxi2), dL by central differences of the loss."""
    prep = prepare(sample)
    h = 1e-5 * max(1.0, xi1)
    fd1 = (reduced_loss(xi1 + h, xi2, sample) - reduced_loss(xi1 - h, xi2, sample)) / (2 * h)
    fd2 = (reduced_loss(xi1, xi2 + h, sample) - reduced_loss(xi1, xi2 - h, sample)) / (2 * h)
    xi1_dot, xi2_dot = ps.rate(*loss_grad_prepared(xi1, xi2, prep)[1:], D, factor)
    assert float(xi1_dot) == pytest.approx(-factor * fd1 / D, rel=1e-6, abs=1e-14)
    assert float(xi2_dot) == pytest.approx(-factor * fd2, rel=1e-6, abs=1e-14)


@pytest.mark.parametrize(("xi1", "xi2"), [(2.0, 3.0), (20.0, 15.0), (100.0, 90.0)])
def test_rate_on_the_population_is_minus_the_finite_difference_gradient(xi1, xi2):
    """The population quadrature at a point is a weighted set of prompts: the rate from its gradient against
    central differences of its loss, its nodes held where the point puts them (moving them with xi would add the
    derivative of the quadrature's own error, which at large xi exceeds dL/dxi2 itself)."""
    prep = nodes(xi1, xi2, quadrature(N, D, 128, 64, 0)).prepared
    h = 1e-5 * max(1.0, xi1)
    fd1 = (loss_grad_prepared(xi1 + h, xi2, prep)[0] - loss_grad_prepared(xi1 - h, xi2, prep)[0]) / (2 * h)
    fd2 = (loss_grad_prepared(xi1, xi2 + h, prep)[0] - loss_grad_prepared(xi1, xi2 - h, prep)[0]) / (2 * h)
    for factor in ps.LOSS_FACTORS:
        xi1_dot, xi2_dot = ps.rate(*loss_grad_prepared(xi1, xi2, prep)[1:], D, factor)
        assert float(xi1_dot) == pytest.approx(-factor * fd1 / D, rel=1e-5)
        assert float(xi2_dot) == pytest.approx(-factor * fd2, rel=1e-5)


def test_rate_is_gd_step_over_the_learning_rate(sample):
    """dynamics.gradient_descent's step, divided by lr, is the rate (the factor d on xi1, none on xi2)."""
    lr = 0.1
    gd = gradient_descent(1.0, 5.0, lr, 1, sample, D, record_steps=np.array([0, 1]))
    xi1_dot, xi2_dot = ps.rate(*loss_grad_prepared(1.0, 5.0, prepare(sample))[1:], D)
    assert (gd.xi1[1] - 1.0) / lr == pytest.approx(float(xi1_dot), rel=1e-9)
    assert (gd.xi2[1] - 5.0) / lr == pytest.approx(float(xi2_dot), rel=1e-9)


@pytest.mark.parametrize("sigma", [3.0, 56.14])
def test_lemma11_at_xi1_zero_holds_by_construction(sample, sigma):
    """At xi1 = 0 every context weight is q = 1/(N + e^-sigma), the query's q0 = e^-sigma q, gbar = -q q0, so
    xi2_dot = q q0^2 = e^{-2 sigma}/(N + e^{-sigma})^3 on every prompt, and Lemma 11's margin (left - right)/left
    is 1 - (N + e^{-sigma})^3 / ((N+1)^3 e) > 0 (a = a_{N,d} plays no part at xi1 = 0)."""
    _, xi2_dot = ps.rate(*loss_grad_prepared(0.0, sigma, prepare(sample))[1:], D)
    assert float(xi2_dot) == pytest.approx(math.exp(-2 * sigma) / (N + math.exp(-sigma)) ** 3, rel=1e-12)
    left, right = ps.sides("lemma11", np.array([0.0]), np.array([sigma]), None, xi2_dot, N, D)
    expected = 1 - (N + math.exp(-sigma)) ** 3 / ((N + 1) ** 3 * math.e)
    assert float(ps.margin(left, right, upper=False)[0]) == pytest.approx(expected, rel=1e-10)


def test_sides_typed_from_the_text():
    """Each side at a hand-made point, N = 4, d = 5 (a = (2 N sqrt d)^(-2/(d-3)) = 1/(8 sqrt 5))."""
    n, d, xi1, xi2, x1dot, x2dot, c = 4, 5, 0.3, 1.1, 0.07, 0.02, 2.5
    a = 1 / (8 * math.sqrt(5))
    e = math.e
    expected = {
        "lemma8": (d * x1dot + 2 * x2dot, (1 - 1 / 8) * c * math.exp(-1.8)),
        "lemma9": (x1dot, (8 / 5) * math.exp(-1.2 / 25) - a / (5 * 64 * e) * math.exp(2 * (0.3 - 1.1))),
        "lemma10": (d * x1dot, (1 - 1 / 8) * c * math.exp(-1.8) - 2 * math.exp(0.6 - 2.2)),
        "lemma10_step": (x2dot, math.exp(0.6 - 2.2)),
        "lemma11": (x2dot, math.exp(2 * a * 0.3 - 2.2) / (125 * e)),
        "lemma7": (x2dot, math.exp(-1.1 / 15)),
        "lemma12": ((8 / 5) * math.exp(-1.2 / 25), a / (5 * 64 * e) * math.exp(-1.6)),
        "lemma12_replaced": (0.75, math.log(2 * 256 * e / a) + 2.2),
        "lemma12_printed": (0.75, math.log(2 * 256 * e / a) + 1.1),
    }
    assert set(expected) == set(ps.BY_NAME)
    for name, (left, right) in expected.items():
        got = ps.sides(name, np.array([xi1]), np.array([xi2]), np.array([x1dot]), np.array([x2dot]), n, d, c_d=c)
        assert float(np.asarray(got[0]).ravel()[0]) == pytest.approx(left, rel=1e-13), name
        assert float(np.asarray(got[1]).ravel()[0]) == pytest.approx(right, rel=1e-13), name


def test_largest_c_d_makes_the_lemma_hold_with_zero_margin():
    xi1, xi2, x1dot, x2dot = np.array([0.2, 1.5]), np.array([3.0, 3.5]), np.array([0.01, 0.002]), np.array([1e-4, 0.0])
    for name in ("lemma8", "lemma10"):
        c = ps.largest_c_d(name, xi1, xi2, x1dot, x2dot, N, D)
        for k in range(2):
            left, right = ps.sides(name, xi1[k : k + 1], xi2[k : k + 1], x1dot[k : k + 1], x2dot[k : k + 1], N, D, c[k])
            assert float(left[0]) == pytest.approx(float(right[0]), rel=1e-12)


def test_margin_is_positive_where_the_inequality_holds():
    assert float(ps.margin(1.0, 3.0, upper=True)) == 2.0
    assert float(ps.margin(-2.0, 1.0, upper=True)) == 1.5
    assert float(ps.margin(1.0, 3.0, upper=False)) == -2.0
    assert float(ps.margin(4.0, 1.0, upper=False)) == 0.75


def test_lemma12_from_lemma9_never_holds_on_the_line_and_the_printed_form_holds_beyond_its_threshold():
    """On xi1 = (7/15) xi2 the condition from Lemma 9 asks (16/7 - 4/(N+1)^2) xi1 < log(a/(2 N^4 e)) < 0, so it
    fails for every xi2 >= 0; with the first term e^{-xi1/2} it asks 7/6 xi2 > log(2N^4 e/a) + 2 xi2: never; the
    printed form, 7/6 xi2 > log(2N^4 e/a) + xi2, holds exactly when xi2 > 6 log(2N^4 e/a)."""
    xi2 = np.geomspace(1e-3, 1e4, 200)
    xi1 = XI_RATIO_BOUND * xi2
    for name in ("lemma12", "lemma12_replaced"):
        left, right = ps.sides(name, xi1, xi2, None, None, N, D)
        assert np.all(ps.margin(left, right, ps.BY_NAME[name].upper) < 0), name
    threshold = 6 * math.log(2 * N**4 * math.e / lemma12_a(N, D))
    assert ps.printed_threshold(N, D) == pytest.approx(threshold, rel=1e-15)
    left, right = ps.sides("lemma12_printed", xi1, xi2, None, None, N, D)
    holds = ps.margin(left, right, upper=False) > 0
    np.testing.assert_array_equal(holds, xi2 > threshold)


def test_jensen_sides_on_two_prompts_by_hand():
    """t = (1, 0) and (-1, 1): distances s = (0, 1) and (2, 0); at xi1 = 1/2 the term is s e^{-s}."""
    left, right_population, right_prompt = ps.jensen_sides(0.5, np.array([[1.0, 0.0], [-1.0, 1.0]]))
    np.testing.assert_allclose(left, [math.exp(-1), 2 * math.exp(-2)], rtol=1e-14)
    np.testing.assert_allclose(right_population, [2 * math.exp(-1)] * 2, rtol=1e-14)
    np.testing.assert_allclose(right_prompt, [math.exp(-0.5), 2 * math.exp(-1)], rtol=1e-14)


@pytest.mark.parametrize("xi1", [0.0, 0.3, 5.0, 1e4])
def test_jensen_mean_left_in_closed_form_at_d3(xi1):
    """At d = 3 an inner product is uniform on [-1, 1], s = 1 - t uniform on [0, 2]:
    E[s e^{-a s}] = (1 - e^{-2a}(1 + 2a)) / (2 a^2), a = 2 xi1 (1 at xi1 = 0)."""
    a = 2 * xi1
    expected = 1.0 if a == 0 else (1 - math.exp(-2 * a) * (1 + 2 * a)) / (2 * a * a)
    assert ps.jensen_mean_left(xi1, 5, 3) == pytest.approx(5 * expected, rel=1e-9)


@pytest.mark.parametrize("d", [3, 8])
def test_jensen_threshold_is_where_the_expectations_meet(d):
    """Below the root the population reading holds, above it fails; at d = 3 against the closed form."""
    root = ps.jensen_threshold(d)
    for xi1, holds in ((0.5 * root, True), (root, None), (1.5 * root, False)):
        left, right = ps.jensen_mean_left(xi1, 1, d), math.exp(-2 * xi1)
        if holds is None:
            assert left == pytest.approx(right, rel=1e-9)
        else:
            assert (left <= right) is holds
    if d == 3:
        a = 2 * root
        assert (1 - math.exp(-2 * a) * (1 + 2 * a)) / (2 * a * a) == pytest.approx(math.exp(-a), rel=1e-9)


def test_crossing_interpolates_the_ratio():
    # the ratio 0.4 at t = 1 and 0.6 at t = 2 (xi2 = 1): 7/15 at a share (7/15 - 0.4)/0.2 of the way, in log time
    time, xi1, xi2 = np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.4, 0.6]), np.array([1.0, 1.0, 1.0])
    share = (7 / 15 - 0.4) / 0.2
    t, a, b = crossing(time, xi1, xi2)
    assert t == pytest.approx(2.0**share)
    assert a / b == pytest.approx(7 / 15)
    assert all(math.isnan(v) for v in crossing(time, xi1 / 10, xi2))
    # from time 0 the interpolation is linear (no log of 0)
    assert crossing(time, np.array([0.0, 0.6, 0.7]), xi2)[0] == pytest.approx(7 / 15 / 0.6)


def test_the_audit_tables_crossing_time_is_the_crossing():
    from onenn.analysis.tables import crossing_time

    time = np.array([0.0, 10.0, 100.0, 1000.0])
    xi1, xi2 = np.array([0.0, 0.1, 0.3, 0.9]), np.array([3.0, 1.0, 1.0, 1.2])
    part = pd.DataFrame({"time": time, "xi1": xi1, "xi2": xi2})
    assert crossing(time, xi1, xi2)[0] == crossing_time(part)


@pytest.fixture(scope="module")
def tiny_audit():
    settings = {
        "sigma": 3.0,
        "steps": 40,
        "lr": 0.1,
        "sample_time_end": 10.0,
        "time_end": 1e3,
        "n_plain": 512,
        "n_max": 8,
        "n_gap": 8,
        "t1_nodes": 64,
        "gap_nodes": 16,
        "third_nodes": 2,  # the population rows at a coarse t3 (the default 8 doubles the fixture's cost)
        "n_eval": 60,
    }
    table = run_audit(AuditSettings.from_dict(settings)).assign(variant="sigma=3")
    return settings, table, inequalities_table(table, {"sigma=3": settings})


def test_gd_rate_is_gd_increment_over_lr(tiny_audit):
    """Along GD on the sample: xi1_dot = left of Lemma 9 (reading L) is (xi1 after - xi1 before)/lr, xi2_dot =
    left of Lemma 11 is (xi2 after - xi2 before)/lr, at consecutive recorded steps (up to the rounding of xi2
    near 3 over lr: a few 1e-15)."""
    settings, table, steps = tiny_audit
    gd = table[table["source"] == "gd"].sort_values("step")
    consecutive = np.flatnonzero(np.diff(gd["step"].to_numpy()) == 1)
    assert consecutive.size >= 10
    rows = steps[(steps["source"] == "gd") & (steps["reading"] == "L") & (steps["point"] == "trajectory")]
    for name, column in (("lemma9", "xi1"), ("lemma11", "xi2")):
        left = rows[rows["inequality"] == name].sort_values("time")["left"].to_numpy()
        increment = np.diff(gd[column].to_numpy()) / settings["lr"]
        np.testing.assert_allclose(left[consecutive], increment[consecutive], rtol=1e-9, atol=2e-14)


def test_table_holds_every_inequality_and_the_start_point(tiny_audit):
    _, _, steps = tiny_audit
    pop = steps[(steps["source"] == "population") & (steps["point"] == "trajectory")]
    assert set(pop["inequality"]) == set(ps.BY_NAME) | {"jensen_population", "jensen_prompt"}
    start = pop[(pop["inequality"] == "lemma11") & (pop["reading"] == "L") & (pop["time"] == 0)]
    expected = 1 - (N + math.exp(-3.0)) ** 3 / ((N + 1) ** 3 * math.e)
    assert float(start["margin"].iloc[0]) == pytest.approx(expected, rel=1e-9)
    doubled = pop[(pop["inequality"] == "lemma11") & (pop["reading"] == "2L") & (pop["time"] == 0)]
    assert float(doubled["left"].iloc[0]) == pytest.approx(2 * float(start["left"].iloc[0]), rel=1e-12)
    jensen = pop[pop["inequality"] == "jensen_population"]
    assert jensen["fail_share"].between(0, 1).all()


def _hand_rows(name: str, reading: str, margins: list[float], inside: list[bool]) -> pd.DataFrame:
    n = len(margins)
    return pd.DataFrame(
        {
            "variant": "v",
            "sigma": 3.0,
            "sigma_rule": "3.0",
            "source": "population",
            "reading": reading,
            "inequality": name,
            "label": name,
            "point": "trajectory",
            "time": np.arange(n, dtype=float),
            "xi1": np.arange(n, dtype=float),
            "xi2": np.full(n, 10.0),
            "inside": inside,
            "left": 1.0,
            "right": 1.0,
            "margin": margins,
            "c_d_bound": np.nan,
            "fail_share": np.nan,
            "printed_threshold": 100.0,
            "lemma12_threshold": 50.0,
            "jensen_threshold": 1.0,
        }
    )


def test_first_in_region_is_the_earliest_failure_before_the_crossing():
    """Lemma 7 fails first but after the crossing; the Jensen step fails at t = 2, Lemma 9 at t = 3, both before."""
    inside = [True, True, True, True, False]
    steps = pd.concat(
        [
            _hand_rows("lemma7", "L", [1, 1, 1, 1, -1], inside),
            _hand_rows("lemma7", "2L", [1, -1, 1, 1, 1], inside),  # the reading the verdict does not use
            _hand_rows("jensen_population", "–", [1, 1, -0.5, -1, -1], inside),
            _hand_rows("lemma9", "L", [1, 1, 1, -2, -2], inside),
        ]
    )
    assert first_in_region(steps) == ("jensen_population", 2.0)
    assert first_in_region(steps[steps["inequality"] != "jensen_population"]) == ("lemma9", 3.0)
    assert first_in_region(steps[steps["inequality"] == "lemma7"]) is None


def test_page_and_figure_of_a_small_audit(tiny_audit):
    _, _, steps = tiny_audit
    text = page(steps)
    assert text.count("## sigma=3") == 1
    for label in ps.BY_NAME.values():
        assert label.label.split(":")[0] in text
    fig = figure(steps)
    assert len(fig.axes) == 8
    plt.close(fig)


def test_half_the_prompts_fail_the_jensen_step_at_xi1_zero_and_the_page_gives_the_share_along_the_flow(tiny_audit):
    """At xi1 = 0 the reading E[s] = 1 fails where the mean inner product of the prompt is negative: half of them,
    as the law of t_j is symmetric; the weighted sample's share is within four of its standard errors of 1/2."""
    from onenn.theory.audit import weighted_sample

    settings, _, steps = tiny_audit
    w = weighted_sample(AuditSettings.from_dict(settings))[1]
    w = w / w.sum()
    start = steps[(steps["inequality"] == "jensen_population") & (steps["time"] == 0)]
    assert float(start["xi1"].iloc[0]) == 0.0
    assert float(start["fail_share"].iloc[0]) == pytest.approx(0.5, abs=4 * math.sqrt(0.25 * float(w @ w)))
    text = page(steps, "lemmas.png")
    table = text.split("## sigma=3")[1].split("share failing, E[s] = 1")[1].split("\n\n")[0]
    shares = [line.split(" | ") for line in table.splitlines()[2:]]
    times = [float(row[0].lstrip("| ")) for row in shares]
    assert times[0] == 0 and all(math.log10(t) == round(math.log10(t)) for t in times[1:]) and len(times) > 2
    assert text.index("- sigma=3 (σ = 3): the flow crosses 7/15") < text.index("](lemmas.png)") < text.index("## ")


def test_nodes_too_few_to_halve_give_no_resolution_rows():
    settings = {"sigma": 3.0, "steps": 5, "sample_time_end": 1.0, "time_end": 10.0, "levels": 1}
    settings |= {"n_plain": 64, "n_max": 4, "n_gap": 4, "t1_nodes": 32, "gap_nodes": 8, "n_eval": 6}
    table = run_audit(AuditSettings.from_dict(settings)).assign(variant="v")
    steps = inequalities_table(table, {"v": settings})
    assert set(steps["source"]) == {"population", "gd"}
