"""Tests for onenn.theory.reduced (sampling, loss, dynamics, thresholds): the reduced dynamics on the family diag(xi1 I_d, 0, -xi2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import softmax

from onenn.maths.family import XI_RATIO_BOUND
from onenn.theory.audit import lemma12_a, sigma_threshold_lemma12, sigma_threshold_theorem1
from onenn.theory.reduced.dynamics import flow_of, gradient_descent, gradient_flow
from onenn.theory.reduced.loss import (
    loss_landscape,
    loss_scale,
    monte_carlo_estimate,
    monte_carlo_estimates,
    reduced_loss,
)
from onenn.theory.reduced.sampling import audit_sample, inner_product_cdf, inner_product_density, sample_inner_products


def _naive_weights(xi1: float, xi2: float, t: np.ndarray) -> np.ndarray:
    """Attention of the query over the N context points and itself, straight from the scores (n, N+1)."""
    scores = np.concatenate([xi1 * t, np.full((t.shape[0], 1), xi1 - xi2)], axis=1)
    return softmax(scores, axis=1)


def _mc_label_loss(xi1: float, xi2: float, t: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Mean and standard error of 1/2 (sum_j q_j y_j - y_{i*})^2 with explicit labels (n, N)."""
    q = _naive_weights(xi1, xi2, t)[:, :-1]
    i_star = np.argmax(t, axis=1)
    err = (q * labels).sum(axis=1) - labels[np.arange(t.shape[0]), i_star]
    per = 0.5 * err**2
    return float(per.mean()), float(per.std(ddof=1) / math.sqrt(per.size))


@pytest.fixture(scope="module")
def t_small() -> np.ndarray:
    return sample_inner_products(4000, 16, 8, np.random.default_rng(1))


# (a) closed-form label expectation vs explicit labels ----------------------------------------------------


@pytest.mark.parametrize("xi", [(0.0, 3.0), (4.0, 9.0), (12.0, 20.0)])
@pytest.mark.parametrize("label_kind", ["rademacher", "gaussian"])
def test_closed_form_matches_label_monte_carlo(xi: tuple[float, float], label_kind: str) -> None:
    rng = np.random.default_rng(2)
    t = sample_inner_products(20000, 16, 8, rng)
    # Redraw labels 5 times on the same t to shrink the label noise; the closed form averages it exactly.
    means, ses = [], []
    for _ in range(5):
        if label_kind == "rademacher":
            y = rng.choice([-1.0, 1.0], size=t.shape)
        else:
            y = rng.standard_normal(t.shape)
        m, s = _mc_label_loss(*xi, t, y)
        means.append(m)
        ses.append(s)
    mc, se = float(np.mean(means)), float(np.sqrt(np.mean(np.square(ses)) / len(ses)))
    closed = reduced_loss(*xi, t)
    assert abs(closed - mc) < 4 * se, (closed, mc, se)


def test_multiclass_scaling_with_simplex_codes() -> None:
    """L_MC from actual simplex-coded labels equals ((K-1)/K) L_bin (Lemma 2 of the multiclass paper; docs/method.md §4.3)."""
    rng = np.random.default_rng(3)
    K, xi1, xi2 = 3, 3.0, 7.0
    t = sample_inner_products(40000, 16, 8, rng)
    codes = np.eye(K) - 1.0 / K  # row k is u_k
    classes = rng.integers(0, K, size=t.shape)
    q = _naive_weights(xi1, xi2, t)[:, :-1]
    ell = np.einsum("nj,njk->nk", q, codes[classes])
    target = codes[classes[np.arange(t.shape[0]), np.argmax(t, axis=1)]]
    per = 0.5 * ((ell - target) ** 2).sum(axis=1)
    se = per.std(ddof=1) / math.sqrt(per.size)
    assert abs(reduced_loss(xi1, xi2, t, K=K) - per.mean()) < 4 * se
    assert loss_scale(K) == pytest.approx(2.0 / 3.0)


def test_closed_form_equals_direct_formula(t_small: np.ndarray) -> None:
    """The cancellation-free form equals 1/2 E[sum q_j^2 - 2 q_{i*} + 1] where the latter is accurate."""
    q = _naive_weights(3.0, 5.0, t_small)[:, :-1]
    i_star = np.argmax(t_small, axis=1)
    direct = 0.5 * ((q**2).sum(1) - 2 * q[np.arange(q.shape[0]), i_star] + 1).mean()
    assert reduced_loss(3.0, 5.0, t_small) == pytest.approx(direct, rel=1e-12)


# (b) the inner-product sampler ---------------------------------------------------------------------------


@pytest.mark.parametrize("d", [3, 8, 20])
def test_inner_product_sampler_matches_sphere(d: int) -> None:
    rng = np.random.default_rng(4)
    n = 40000
    t = sample_inner_products(n // 4, 4, d, rng).ravel()
    # Direct: x_j and x_q uniform on S^{d-1} as normalised Gaussians.
    x = rng.standard_normal((n, d))
    xq = rng.standard_normal((n, d))
    direct = (x * xq).sum(1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(xq, axis=1))
    assert stats.ks_2samp(t, direct).pvalue > 1e-3
    # Exact moments: E t^2 = 1/d, E t^4 = 3/(d(d+2)).
    for sample, moment, exact in ((t**2, 2, 1 / d), (t**4, 4, 3 / (d * (d + 2)))):
        se = sample.std(ddof=1) / math.sqrt(sample.size)
        assert abs(sample.mean() - exact) < 5 * se, (moment, sample.mean(), exact)
    assert abs(t.mean()) < 5 * t.std() / math.sqrt(t.size)


def test_sampler_is_reproducible_and_in_range() -> None:
    a = sample_inner_products(100, 32, 8, np.random.default_rng(7))
    b = sample_inner_products(100, 32, 8, np.random.default_rng(7))
    assert a.shape == (100, 32) and a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    assert np.all(np.abs(a) <= 1)


# (c) analytic gradient vs central finite differences -----------------------------------------------------


@pytest.mark.parametrize("xi", [(0.0, 3.0), (0.7, 1.2), (4.0, 9.0), (15.0, 30.0), (-2.0, 0.5), (30.0, 40.0)])
@pytest.mark.parametrize("K", [None, 5])
def test_gradient_matches_finite_differences(t_small: np.ndarray, xi: tuple[float, float], K: int | None) -> None:
    xi1, xi2 = xi
    _, g1, g2 = monte_carlo_estimate(xi1, xi2, t_small, K=K)[:3]
    h = 1e-5 * max(1.0, abs(xi1), abs(xi2))

    def loss(a: float, b: float) -> float:
        return reduced_loss(a, b, t_small, K=K)

    fd1 = (loss(xi1 + h, xi2) - loss(xi1 - h, xi2)) / (2 * h)
    fd2 = (loss(xi1, xi2 + h) - loss(xi1, xi2 - h)) / (2 * h)
    assert abs(g1 - fd1) <= 1e-7 * abs(g1), (g1, fd1)
    # dL/dxi2 can be tiny (the query's weight is ~exp(-xi2)); judge it relative to the gradient's size.
    assert abs(g2 - fd2) <= 1e-7 * max(abs(g2), 1e-3 * math.hypot(g1, g2)), (g2, fd2)


def test_gradient_matches_finite_differences_xi2_component(t_small: np.ndarray) -> None:
    """Where dL/dxi2 is not tiny, its own relative error is <= 1e-7."""
    xi1, xi2 = 1.0, 0.5
    _, _, g2 = monte_carlo_estimate(xi1, xi2, t_small)[:3]
    h = 1e-5
    fd2 = (reduced_loss(xi1, xi2 + h, t_small) - reduced_loss(xi1, xi2 - h, t_small)) / (2 * h)
    assert abs(g2) > 1e-3
    assert abs(g2 - fd2) <= 1e-7 * abs(g2)


def test_monte_carlo_estimate_consistent(t_small: np.ndarray) -> None:
    est = monte_carlo_estimate(4.0, 9.0, t_small)
    assert est.loss == reduced_loss(4.0, 9.0, t_small)
    # the standard error of the per-prompt loss 1/2 (sum q_j^2 - 2 q_{i*} + 1), from the naive softmax
    q = _naive_weights(4.0, 9.0, t_small)[:, :-1]
    per = 0.5 * ((q**2).sum(1) - 2 * q[np.arange(q.shape[0]), np.argmax(t_small, axis=1)] + 1)
    assert est.loss_se == pytest.approx(per.std(ddof=1) / math.sqrt(per.size), rel=1e-9)


def test_loss_landscape_matches_pointwise(t_small: np.ndarray) -> None:
    xi1_grid, xi2_grid = np.array([0.0, 2.0, 5.0]), np.array([1.0, 6.0])
    grid, se = loss_landscape(xi1_grid, xi2_grid, t_small, K=3)
    assert grid.shape == se.shape == (3, 2)
    assert grid[2, 1] == pytest.approx(reduced_loss(5.0, 6.0, t_small, K=3), rel=1e-14)


# (d) gradient flow vs gradient descent -------------------------------------------------------------------


def test_gd_first_step_by_hand(t_small: np.ndarray) -> None:
    _, g1, g2 = monte_carlo_estimate(0.0, 3.0, t_small)[:3]
    traj = gradient_descent(0.0, 3.0, 0.05, 1, t_small, d=8, record_steps=np.array([0, 1]))
    assert traj.xi1[1] == pytest.approx(0.0 - 0.05 / 8 * g1, rel=1e-14)
    assert traj.xi2[1] == pytest.approx(3.0 - 0.05 * g2, rel=1e-14, abs=1e-300)
    assert traj.time[1] == pytest.approx(0.05)


def test_flow_continuation_matches_gd_on_overlap() -> None:
    """Start the ODE from a GD state and compare with GD continued over the same window (time 2..40).

    GD is forward Euler for the flow, so their gap is first order in lr: about (lr/2) * T * |J F| * |F|
    over a window of length T. Here |F| ~ 1e-2 and |J F| ~ 1e-2 per unit time, so the gap is ~1e-3 * lr
    (measured: 1e-5 at lr = 0.01). We require gap < 5e-3 * lr at lr = 0.01 and that it halves
    (ratio 1.6..2.4) when lr halves: the signature of Euler discretisation error rather than a mismatch
    between the two sets of equations (a wrong 1/d factor would give an O(1) gap that does not shrink).
    The ODE's own error (rtol 1e-10) is negligible against that.
    """
    t = sample_inner_products(1000, 16, 8, np.random.default_rng(5))
    # A fast region: xi2 small, so both coordinates move (xi2 goes 0.5 -> 1.0 by time 40).
    xi0, time_start, time_end = (2.0, 0.5), 2.0, 40.0
    gaps = []
    for lr in (0.01, 0.005):
        s0, s1 = round(time_start / lr), round(time_end / lr)
        rec = np.unique(np.concatenate([[0, s0], np.geomspace(s0, s1, 12).round().astype(int), [s1]]))
        gd = gradient_descent(*xi0, lr, s1, t, d=8, record_steps=rec)
        k0 = int(np.searchsorted(gd.step, s0))
        flow = gradient_flow(gd.xi1[k0], gd.xi2[k0], time_start, time_end, t, d=8, n_eval=12, rtol=1e-10)
        gd_xi1 = np.interp(flow.time, gd.time, gd.xi1)
        gd_xi2 = np.interp(flow.time, gd.time, gd.xi2)
        # compare only at GD record times that coincide with flow times (interp endpoints are exact)
        both = np.isclose(flow.time[:, None], gd.time[None, k0:]).any(axis=1)
        assert both.sum() >= 2
        gaps.append(max(np.max(np.abs(gd_xi1 - flow.xi1)[both]), np.max(np.abs(gd_xi2 - flow.xi2)[both])))
        assert gd.xi2[-1] - gd.xi2[k0] > 0.3  # the window really moves
    assert gaps[0] < 5e-3 * 0.01, gaps
    assert 1.6 < gaps[0] / gaps[1] < 2.4, gaps


def test_flow_reaches_1e12_without_increasing_the_loss() -> None:
    t = sample_inner_products(2000, 16, 8, np.random.default_rng(6))
    flow = gradient_flow(0.0, 3.0, 0.0, 1e12, t, d=8, n_eval=13)
    assert flow.time[0] == 0.0 and flow.time[-1] == pytest.approx(1e12)
    assert np.all(np.diff(flow.loss) <= 1e-12)  # gradient flow never increases the loss
    assert flow.xi1[-1] > flow.xi1[0]
    exact = gradient_flow(0.0, 3.0, 0.0, 1e12, t, d=8, record_times=np.array([1e4, 1e12]))
    np.testing.assert_array_equal(exact.time, [1e4, 1e12])
    np.testing.assert_allclose(exact.xi1[-1], flow.xi1[-1], rtol=1e-6)


# (e) thresholds against hand computation -----------------------------------------------------------------


def test_thresholds_d8_n32() -> None:
    N, d = 32, 8
    # Theorem 1: 2 max(log(N d), -log(1 - (N sqrt d)^(-1/d))); N sqrt d = 2^5 * 2^1.5 = 2^6.5.
    term1 = 8 * math.log(2)  # log(256) = 5.545177
    term2 = -math.log(1 - 2 ** (-6.5 / 8))  # -log(1 - 0.569394) = 0.842562
    assert term2 == pytest.approx(0.842562, abs=1e-6)
    assert sigma_threshold_theorem1(N, d) == pytest.approx(2 * max(term1, term2), rel=1e-12)
    assert sigma_threshold_theorem1(N, d) == pytest.approx(11.090355, abs=1e-6)
    # Lemma 12: a = (2 N sqrt d)^(-2/(d-3)) = (2^7.5)^(-2/5) = 2^-3; 2 N^4 d / a = 2 * 2^20 * 2^3 * 2^3 = 2^27.
    assert lemma12_a(N, d) == pytest.approx(0.125, rel=1e-12)
    assert sigma_threshold_lemma12(N, d) == pytest.approx(3 * 27 * math.log(2), rel=1e-12)
    assert sigma_threshold_lemma12(N, d) == pytest.approx(56.144922, abs=1e-6)
    assert XI_RATIO_BOUND == pytest.approx(7 / 15)


# (f) bad arguments ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda t: sample_inner_products(0, 4, 8, np.random.default_rng(0)), "prompts"),
        (lambda t: sample_inner_products(5, 0, 8, np.random.default_rng(0)), "N"),
        (lambda t: sample_inner_products(5, 4, 1, np.random.default_rng(0)), "d"),
        (lambda t: sample_inner_products(5, 4, 8, 0), "rng"),
        (lambda t: reduced_loss(1.0, 2.0, t[0]), "t"),
        (lambda t: reduced_loss(1.0, 2.0, 2 * t + 2), "t"),
        (lambda t: reduced_loss(float("nan"), 2.0, t), "xi1"),
        (lambda t: reduced_loss(1.0, 2.0, t, K=1), "K"),
        (lambda t: gradient_descent(0.0, 3.0, -0.1, 10, t, d=8), "lr"),
        (lambda t: gradient_descent(0.0, 3.0, 0.1, -1, t, d=8), "steps"),
        (lambda t: gradient_descent(0.0, 3.0, 0.1, 10, t, d=8, record_steps=np.array([0, 20])), "record_steps"),
        (lambda t: gradient_flow(0.0, 3.0, -1.0, 10.0, t, d=8), "time_start"),
        (lambda t: gradient_flow(0.0, 3.0, 5.0, 1.0, t, d=8), "time_end"),
        (lambda t: gradient_flow(0.0, 3.0, 0.0, 1.0, t, d=8, method="Euler"), "method"),
        (lambda t: gradient_flow(0.0, 3.0, 0.0, 1.0, t, d=8, rtol=0.0), "rtol"),
        (lambda t: gradient_flow(0.0, 3.0, 0.0, 1.0, t, d=8, record_times=np.array([0.5, 2.0])), "record_times"),
        (lambda t: lemma12_a(32, 3), "d"),
        (lambda t: sigma_threshold_theorem1(0, 8), "N"),
        (lambda t: loss_landscape([], [1.0], t), "xi1_grid"),
    ],
)
def test_bad_arguments_raise(t_small: np.ndarray, call, name: str) -> None:
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call(t_small)


# (g) weighted samples and the audit's population sample --------------------------------------------------


def test_weights_generalise_the_plain_mean(t_small: np.ndarray) -> None:
    """Equal weights give the plain mean; an integer weight k equals repeating the prompt k times."""
    plain = monte_carlo_estimate(3.0, 6.0, t_small)[:3]
    equal = monte_carlo_estimate(3.0, 6.0, t_small, weights=np.full(len(t_small), 7.0))[:3]
    assert equal == pytest.approx(plain, rel=1e-12)
    k = np.random.default_rng(0).integers(1, 4, size=len(t_small))
    repeated = monte_carlo_estimate(3.0, 6.0, np.repeat(t_small, k, axis=0))[:3]
    assert monte_carlo_estimate(3.0, 6.0, t_small, weights=k.astype(float))[:3] == pytest.approx(repeated, rel=1e-12)
    with pytest.raises(ValueError, match="weights"):
        reduced_loss(3.0, 6.0, t_small, weights=np.ones(3))


@pytest.mark.parametrize("d", [3, 8])
def test_inner_product_density_and_cdf(d: int) -> None:
    grid = np.linspace(-1, 1, 20001)
    dens = inner_product_density(grid, d)
    assert np.trapezoid(dens, grid) == pytest.approx(1.0, abs=1e-6)
    cdf = inner_product_cdf(np.array([-1.0, 0.0, 0.3, 1.0]), d)
    np.testing.assert_allclose(cdf[[0, 1, 3]], [0.0, 0.5, 1.0], atol=1e-15)
    mask = grid <= 0.3
    assert cdf[2] == pytest.approx(np.trapezoid(dens[mask], grid[mask]), abs=2e-4)


@pytest.fixture(scope="module")
def weighted_sample() -> tuple[np.ndarray, np.ndarray, float]:
    return audit_sample(8192, 128, 64, 32, 8, np.random.default_rng(11))


def test_audit_sample_mass_and_order_statistics(weighted_sample) -> None:
    t, w, mass = weighted_sample
    assert t.shape == (8192 + 128 * 64, 32) and w.sum() == pytest.approx(1.0)
    assert mass == pytest.approx(1.0, abs=0.02)  # unbiased estimate of 1
    # E t_(1) by quadrature of its density N F^(N-1) f
    grid = np.linspace(-1, 1, 200001)
    dens_max = 32 * inner_product_cdf(grid, 8) ** 31 * inner_product_density(grid, 8)
    exact = np.trapezoid(grid * dens_max, grid)
    assert t.max(axis=1) @ w == pytest.approx(exact, abs=2e-3)
    # E sum_j t_j^2 = N / d
    assert (t**2).sum(axis=1) @ w == pytest.approx(32 / 8, abs=0.05)


def test_audit_sample_resolves_the_far_tail(weighted_sample) -> None:
    """P(t_(1) <= 0) = F(0)^N = 2^-32 (F(0) = 1/2 by symmetry): invisible to a plain sample, resolved here."""
    t, w, _ = weighted_sample
    tail = w[t.max(axis=1) <= 0].sum()
    assert tail == pytest.approx(2.0**-32, rel=0.25)  # one draw per stratum of a steep tail: ~10% error


@pytest.mark.parametrize("xi", [(2.0, 5.0), (10.0, 12.0), (60.0, 40.0)])
def test_audit_sample_agrees_with_a_plain_sample(weighted_sample, xi) -> None:
    t, w, _ = weighted_sample
    a = monte_carlo_estimate(*xi, t, weights=w)
    plain = sample_inner_products(100_000, 32, 8, np.random.default_rng(12))
    b = monte_carlo_estimate(*xi, plain)
    assert abs(a.loss - b.loss) < 4 * math.hypot(a.loss_se, b.loss_se), (a, b)
    assert abs(a.grad_xi1 - b.grad_xi1) < 4 * math.hypot(a.grad_xi1_se, b.grad_xi1_se), (a, b)


def test_weighted_gradient_matches_finite_differences(weighted_sample) -> None:
    t, w, _ = weighted_sample
    xi1, xi2 = 40.0, 25.0
    _, g1, g2 = monte_carlo_estimate(xi1, xi2, t, weights=w)[:3]
    h = 1e-4
    fd1 = (reduced_loss(xi1 + h, xi2, t, weights=w) - reduced_loss(xi1 - h, xi2, t, weights=w)) / (2 * h)
    fd2 = (reduced_loss(xi1, xi2 + h, t, weights=w) - reduced_loss(xi1, xi2 - h, t, weights=w)) / (2 * h)
    assert g1 == pytest.approx(fd1, rel=1e-6)
    assert g2 == pytest.approx(fd2, rel=1e-6)


# (f) the fast paths against the definitions ---------------------------------------------------------------


def _naive_loss_grad(xi1: float, xi2: float, t: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(L, dL/dxi1, dL/dxi2) of the weighted sample, from the naive softmax: per prompt f = 1/2 (sum_j q_j^2
    - 2 q_{i*} + 1), df/ds_k = q_k (g_k - gbar), ds_k/dxi1 = t_k (t_0 = 1 for the query), ds_0/dxi2 = -1."""
    q = _naive_weights(xi1, xi2, t)  # (n, N+1), the query last
    rows, i_star = np.arange(t.shape[0]), np.argmax(t, axis=1)
    f = 0.5 * ((q[:, :-1] ** 2).sum(1) - 2 * q[rows, i_star] + 1)
    g = np.concatenate([q[:, :-1], np.zeros((t.shape[0], 1))], axis=1)
    g[rows, i_star] -= 1.0
    ds = q * (g - (q * g).sum(1, keepdims=True))
    t_all = np.concatenate([t, np.ones((t.shape[0], 1))], axis=1)
    return np.array([f @ w, (ds * t_all).sum(1) @ w, -ds[:, -1] @ w])


@pytest.mark.parametrize("xi", [(0.0, 3.0), (3.0, 5.0), (12.0, 20.0), (8.0, -4.0), (-2.0, 1.0), (-40.0, 10.0)])
def test_loss_and_gradient_equal_the_naive_softmax_over_several_chunks(xi: tuple[float, float]) -> None:
    """The chunked, transposed computation (the query's shift factored out of the context sums when xi1 >= 0)
    against the softmax written out, weighted, on more prompts than one chunk holds (the last chunk partial)."""
    from onenn.theory.reduced.loss import _CHUNK_ROWS

    rng = np.random.default_rng(5)
    t = sample_inner_products(2 * _CHUNK_ROWS + 123, 12, 6, rng)
    w = rng.random(t.shape[0])
    w /= w.sum()
    expected = _naive_loss_grad(*xi, t, w)
    got = np.array(monte_carlo_estimate(*xi, t, weights=w)[:3])
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-13 * np.abs(expected).max())


@pytest.mark.parametrize("weighted", [False, True])
def test_loss_landscape_equals_monte_carlo_estimate_at_every_point(weighted_sample, weighted: bool) -> None:
    """The landscape (the numpy reference) equals the pointwise estimate (the compiled port), its standard error
    included, at every point, negative xi1 and xi2 included."""
    t, w, _ = weighted_sample
    t, w = t[::8], (w[::8] if weighted else None)
    xi1_grid, xi2_grid = np.array([-30.0, -1.0, 0.0, 2.5, 40.0]), np.array([-20.0, 0.0, 1.0, 6.0, 80.0])
    grid, se = loss_landscape(xi1_grid, xi2_grid, t, K=3, weights=w)
    for i, xi1 in enumerate(xi1_grid):
        for k, xi2 in enumerate(xi2_grid):
            est = monte_carlo_estimate(xi1, xi2, t, K=3, weights=w)
            assert grid[i, k] == pytest.approx(est.loss, rel=1e-12)
            assert se[i, k] == pytest.approx(est.loss_se, rel=1e-9, abs=1e-15)


def test_monte_carlo_estimates_along_a_trajectory(t_small: np.ndarray) -> None:
    xi1, xi2 = np.array([0.0, 2.0, 7.5]), np.array([3.0, 4.0, 12.0])
    along = monte_carlo_estimates(xi1, xi2, t_small, K=3)
    assert along == [monte_carlo_estimate(a, b, t_small, K=3) for a, b in zip(xi1, xi2)]
    with pytest.raises(ValueError, match="xi2"):
        monte_carlo_estimates([1.0], [math.inf], t_small)


@pytest.mark.parametrize("record", [[0.0, 1.0, 2.0, 5.0], [0.0, 1.4, 5.0]])
def test_the_flow_records_where_the_ratio_rises_through_the_bound_and_nothing_else_changes(record):
    """A flow with a closed form: dL/dxi1 = -d, dL/dxi2 = 0 give xi1 = t, xi2 = sigma, so xi1/xi2 rises through 7/15
    at t = 7 sigma/15 = 1.4 exactly (sigma = 3): the solver's event puts one row there (none more where a recorded
    time is that time already), and the recorded rows are the flow's without the bound."""

    def value(xi1, xi2):
        return (0.0, -4.0, 0.0)

    times = np.array(record)
    plain = flow_of(value, 0.0, 3.0, 0.0, 5.0, 4, "BDF", times, 1e-10, 1e-12)
    flow = flow_of(value, 0.0, 3.0, 0.0, 5.0, 4, "BDF", times, 1e-10, 1e-12, bound=7 / 15)
    assert flow.time.tolist() == pytest.approx(np.unique(np.append(times, 1.4)).tolist(), rel=1e-9)
    at = int(np.argmin(np.abs(flow.time - 1.4)))
    assert flow.xi1[at] == pytest.approx(1.4, rel=1e-9) and flow.xi2[at] == pytest.approx(3.0, rel=1e-12)
    keep = np.isin(flow.time, times)
    np.testing.assert_array_equal(flow.xi1[keep], plain.xi1)
    np.testing.assert_array_equal(flow.time[keep], times)
