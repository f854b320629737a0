"""The population quadrature of the reduced loss (onenn.theory.reduced.population) against the weighted sample
where both are valid, and against an independent importance-sampling Monte Carlo at large xi."""

import math

import numpy as np
import pytest

from onenn.theory.reduced.loss import monte_carlo_estimate
from onenn.theory.reduced.population import population_loss_grad, quadrature, stuck_mass
from onenn.theory.reduced.sampling import audit_sample, inner_product_cdf, inner_product_density

D, N = 8, 32


@pytest.fixture(scope="module")
def fine():
    return quadrature(N, D, 256, 128, 0)


@pytest.mark.parametrize(("xi1", "xi2"), [(0.003, 3.0), (0.3, 3.0), (1.5, 5.0), (0.01, 56.14)])
def test_the_weights_integrate_the_density_while_the_boundary_is_far_below(xi1, xi2):
    """Early (r = 1 - xi2/xi1 far below -1) the weights' sum, the quadrature of a density, is 1 even at the
    coarsest resolution: the log-cdf piece of t1 does not spread its panels where F^N changes by e^{-N z}."""
    pop = population_loss_grad(xi1, xi2, quadrature(N, D, 64, 32, 0))
    assert pop.mass == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(("xi1", "xi2"), [(0.5, 3.0), (5.0, 6.0), (30.0, 35.0), (80.0, 60.0)])
def test_matches_the_weighted_sample_at_moderate_xi(fine, xi1, xi2):
    """Where the weighted sample resolves the boundary (t <= 1e6, xi1 <= ~100) both agree within its error."""
    t, w, _ = audit_sample(16384, 128, 128, N, D, np.random.default_rng([7, 0]), 1e-8)
    est = monte_carlo_estimate(xi1, xi2, t, weights=w)
    pop = population_loss_grad(xi1, xi2, fine)
    assert pop.mass == pytest.approx(1.0, abs=1e-6)
    # 4 standard errors of the sample, plus 0.5% for the quadrature's own draws of the other N - 2 points
    for value, mean, se in (
        (pop.loss, est.loss, est.loss_se),
        (pop.grad_xi1, est.grad_xi1, est.grad_xi1_se),
        (pop.grad_xi2, est.grad_xi2, est.grad_xi2_se),
    ):
        assert abs(value - mean) <= 4 * se + 5e-3 * abs(mean)


def _importance_monte_carlo(xi1: float, xi2: float, prompts: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """An independent estimate: ``t_(1)`` from a mixture of its law and the uniform law within 20/xi1 of the
    boundary; the gap from a mixture of its law given ``t_(1)`` and the uniform law below 20/xi1; the other N - 2
    drawn below ``t_(2)`` by inverting F exactly. Weights: the density of (t_(1), t_(2)) over the mixture's."""
    from scipy.special import betaincinv

    rng = np.random.default_rng(seed)
    half = (D - 1) / 2

    def inverse(p: np.ndarray) -> np.ndarray:
        return 2.0 * betaincinv(half, half, p) - 1.0

    r, w = 1.0 - xi2 / xi1, 1.0 / xi1
    lo, hi = max(r - 20 * w, -1.0), min(r + 20 * w, 1.0)
    t1 = np.where(rng.random(prompts) < 0.5, rng.uniform(lo, hi, prompts), inverse(rng.random(prompts) ** (1 / N)))
    f1, F1 = inner_product_density(t1, D), inner_product_cdf(t1, D)
    q1 = 0.5 * ((t1 >= lo) & (t1 <= hi)) / (hi - lo) + 0.5 * N * f1 * F1 ** (N - 1)
    width = np.minimum(20 * w, 1.0 + t1)
    t2_law = inverse(F1 * rng.random(prompts) ** (1 / (N - 1)))
    t2 = np.minimum(np.where(rng.random(prompts) < 0.5, t1 - rng.uniform(0.0, width), t2_law), t1)
    f2, F2 = inner_product_density(t2, D), inner_product_cdf(t2, D)
    q2 = 0.5 * (t1 - t2 <= width) / width + 0.5 * (N - 1) * f2 * F2 ** (N - 2) / F1 ** (N - 1)
    p = N * (N - 1) * f1 * f2 * F2 ** (N - 2)
    rest = np.minimum(inverse(rng.random((prompts, N - 2)) * F2[:, None]), t2[:, None])
    t = np.clip(np.concatenate([t1[:, None], t2[:, None], rest], axis=1), -1.0, 1.0)
    return t, p / (q1 * q2)


def test_matches_an_independent_monte_carlo_at_large_xi(fine):
    """At xi1 = 2000 (t ~ 1e9) the boundary's width 1/xi1 is far below a fixed sample's strata: the quadrature
    must agree with an importance-sampling Monte Carlo that targets the boundary and the near-ties."""
    xi1, xi2 = 2000.0, 1600.0
    pop = population_loss_grad(xi1, xi2, fine)
    t, raw = _importance_monte_carlo(xi1, xi2, 200_000, 11)
    assert raw.mean() == pytest.approx(1.0, abs=0.01)  # the proposal's weights: an unbiased estimate of 1
    est = monte_carlo_estimate(xi1, xi2, t, weights=raw)
    mass = raw.mean()
    for value, mean, se in (
        (pop.loss, est.loss * mass, est.loss_se * mass),
        (pop.grad_xi1, est.grad_xi1 * mass, est.grad_xi1_se * mass),
        (pop.grad_xi2, est.grad_xi2 * mass, est.grad_xi2_se * mass),
    ):
        assert abs(value - mean) <= 4 * se + 0.01 * abs(mean), (value, mean, se)
    # the boundary's mass F(r)^N, exact, is the part of the loss near 1/2: below the loss, above 0
    assert 0 < 0.5 * stuck_mass(xi1, xi2, N, D) < pop.loss


def test_stuck_mass_is_the_law_of_the_largest_inner_product():
    r = 0.2
    xi1 = 10.0
    xi2 = xi1 * (1 - r)
    assert stuck_mass(xi1, xi2, N, D) == pytest.approx(float(inner_product_cdf(r, D)) ** N, rel=1e-12)
    samples = np.random.default_rng(0).beta(3.5, 3.5, size=(200_000, N)).max(axis=1) * 2 - 1
    assert stuck_mass(xi1, xi2, N, D) == pytest.approx(np.mean(samples < r), abs=4 * math.sqrt(1e-5 / 2e5) + 1e-6)
    assert stuck_mass(0.0, 3.0, N, D) == 0.0


def test_quadrature_checks_its_arguments():
    with pytest.raises(ValueError, match="t1_nodes must be a multiple of 32"):
        quadrature(N, D, 40, 16, 0)
    with pytest.raises(ValueError, match="gap_nodes"):
        quadrature(N, D, 64, 4, 0)


# --- the third nearest by quadrature, the other N - 3 drawn less their control variates ------------------------


def test_the_third_nearests_rule_integrates_its_law():
    # y uniform on (0, 1) is the law of (F(t3)/F(t2))^(N-2); E[(F(t3)/F(t2))] = E[y^(1/(N-2))] = (N-2)/(N-1)
    q = quadrature(N, D, 32, 8, 0, third_nodes=8)
    assert q.y_weight.sum() == pytest.approx(1.0, rel=1e-14)
    assert q.y_weight @ q.y ** (1 / (N - 2)) == pytest.approx((N - 2) / (N - 1), rel=1e-5)


@pytest.fixture(scope="module")
def prompts():
    """Nodes at a point of the early flow (xi1 = 5: the drawn points matter) and their shift."""
    from onenn.theory.reduced.loss import _shift
    from onenn.theory.reduced.population import nodes

    xi1, xi2 = 5.0, 6.0
    q = quadrature(N, D, 32, 8, 0, third_nodes=4)
    at = nodes(xi1, xi2, q)
    shift = _shift(xi1, xi2, at.prepared.gap_query, at.prepared.gaps_min)
    return xi1, xi2, q, at, shift


def test_the_conditional_moments_are_their_integrals(prompts):
    """``conditional_moments`` against scipy's adaptive quadrature of ``(N - 3) E[h(t) | t < t3]`` under f/F(t3)."""
    from scipy.integrate import quad

    from onenn.theory.reduced.population import conditional_moments

    xi1, _, q, at, shift = prompts
    m = conditional_moments(xi1, at, q, shift)
    rng = np.random.default_rng(3)
    for i in rng.choice(np.flatnonzero(at.prepared.weight > 1e-6), 12, replace=False):
        t1, t3, s = at.t1[i], at.third[i], shift[i]
        weights = (
            lambda t, t1=t1, s=s: np.exp(xi1 * (t - t1) - s),
            lambda t, t1=t1, s=s: np.exp(2 * (xi1 * (t - t1) - s)),
            lambda t, t1=t1, s=s: np.exp(2 * (xi1 * (t - t1) - s)) * (t - t1),
            lambda t, t1=t1, s=s: np.exp(xi1 * (t - t1) - s) * (t - t1),
        )
        for k, h in enumerate(weights):
            integrand = lambda t, h=h: h(t) * inner_product_density(t, D)
            exact = quad(integrand, -1.0, t3, epsabs=0, epsrel=1e-12, limit=200)[0]
            assert m[k, i] == pytest.approx((N - 3) * exact / at.cdf_third[i], rel=1e-7)


def test_at_xi1_zero_the_drawn_sums_are_their_means():
    """At xi1 = 0 every weight is e^{-shift}: the sums of weights and squared weights are their means exactly."""
    from onenn.theory.reduced.loss import _shift
    from onenn.theory.reduced.population import conditional_moments, drawn_sums, nodes

    q = quadrature(N, D, 32, 8, 0, third_nodes=2)
    at = nodes(0.0, 2.0, q)
    shift = _shift(0.0, 2.0, at.prepared.gap_query, at.prepared.gaps_min)
    m, r = conditional_moments(0.0, at, q, shift), drawn_sums(0.0, at.prepared.gaps[2:], shift)
    live = at.cdf_third > 0
    assert np.allclose(m[:2, live], r[:2, live], rtol=1e-9)


def value_from_sums(xi1, xi2, fixed, gap_query, rho, shift):
    """``loss._per_prompt``'s ``(loss, dL/dxi1, dL/dxi2)`` from the drawn points' sums ``rho``, the other context
    gaps ``fixed`` (``(k, n)``) and the query's gap: the function ``population.slopes`` differentiates."""
    from onenn.theory.reduced.population import drawn_sums

    u, a0 = np.exp(-shift), np.exp(xi1 * gap_query - xi2 - shift)  # the nearest point's weight, the query's
    own = drawn_sums(xi1, fixed, shift)
    y = a0 + own[0] + rho[0]  # every weight but the nearest's
    z = u + y
    s2, s3, s4p = own[1] + rho[1], own[2] + rho[2], own[3] + rho[3] + a0 * gap_query
    gbar = (s2 - y * u) / z**2
    return 0.5 * (y * y + s2) / z**2, s3 / z**2 - gbar * s4p / z, a0 * gbar / z


def test_value_from_sums_is_the_per_prompt_loss(prompts):
    """The prompt's value written through the drawn points' sums is ``loss._per_prompt``'s, the definition."""
    from onenn.theory.reduced.loss import _per_prompt
    from onenn.theory.reduced.population import drawn_sums

    xi1, xi2, _, at, shift = prompts
    p = at.prepared
    ours = value_from_sums(xi1, xi2, p.gaps[:2], p.gap_query, drawn_sums(xi1, p.gaps[2:], shift), shift)
    theirs = _per_prompt(xi1, xi2, p.gaps, p.gaps_min, p.gap_query, with_grad=True)
    for a, b in zip(ours, theirs, strict=True):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-15)


def test_the_slopes_are_the_derivatives_of_the_value(prompts):
    """``slopes`` against central finite differences of ``value_from_sums`` in each of the four sums."""
    from onenn.theory.reduced.population import conditional_moments, slopes

    xi1, xi2, q, at, shift = prompts
    p = at.prepared
    m = conditional_moments(xi1, at, q, shift)
    analytic = slopes(xi1, xi2, p.gaps[:2], p.gap_query, m, shift)
    for k in range(4):
        step = 1e-6 * np.maximum(np.abs(m[k]), 1e-3)
        up, down = m.copy(), m.copy()
        up[k] += step
        down[k] -= step
        hi = value_from_sums(xi1, xi2, p.gaps[:2], p.gap_query, up, shift)
        lo = value_from_sums(xi1, xi2, p.gaps[:2], p.gap_query, down, shift)
        for c, a, b in zip(analytic, hi, lo, strict=True):
            numeric = (a - b) / (2 * step)
            assert np.allclose(np.broadcast_to(c[k], numeric.shape), numeric, rtol=1e-5, atol=1e-9)


def test_the_drawn_sums_deviate_from_their_means_by_chance_only(prompts):
    """``E[R | t1, t3] = m``: over the nodes' draws, each sum's deviation from its mean, in units of its spread
    over the prompts, averages to within 5 standard errors of 0 (the draws are fixed: this is deterministic)."""
    from onenn.theory.reduced.population import conditional_moments, drawn_sums

    xi1, _, q, at, shift = prompts
    live = at.cdf_third > 0.05
    m = conditional_moments(xi1, at, q, shift)[:, live]
    r = drawn_sums(xi1, at.prepared.gaps[2:], shift)[:, live]
    for k in range(4):
        z = (r[k] - m[k]) / np.abs(m[k])
        assert abs(z.mean()) < 5 * z.std() / math.sqrt(z.size), k


def test_the_control_variates_keep_the_estimate_and_cut_its_noise():
    """Two seeds of the uniforms at xi1 = 20: with the control variates the estimates agree far more closely than
    the same nodes' plain means, and the plain means agree with the corrected ones within the plain spread."""
    from onenn.theory.reduced.loss import _per_prompt_all
    from onenn.theory.reduced.population import nodes

    xi1, xi2 = 20.0, 14.0
    corrected, plain = [], []
    for seed in (0, 1):
        q = quadrature(N, D, 64, 32, seed, third_nodes=4)
        corrected.append(population_loss_grad(xi1, xi2, q).loss)
        at = nodes(xi1, xi2, q)
        plain.append(float(_per_prompt_all(xi1, xi2, at.prepared, with_grad=False)[0] @ at.prepared.weight))
    assert abs(corrected[0] - corrected[1]) < abs(plain[0] - plain[1])
    assert abs(np.mean(corrected) - np.mean(plain)) < 3 * abs(plain[0] - plain[1]) + 1e-4 * np.mean(plain)


def test_quadrature_checks_the_third_nodes_and_n():
    with pytest.raises(ValueError, match="third_nodes"):
        quadrature(N, D, 32, 8, 0, third_nodes=0)
    with pytest.raises(ValueError, match="N"):
        quadrature(2, D, 32, 8, 0)


@pytest.mark.parametrize(("xi1", "xi2"), [(0.0, 3.0), (5.0, 4.0), (300.0, 151.0)])
def test_the_drawn_points_are_the_inverse_cdf_of_their_uniforms(xi1, xi2):
    """The drawn rows of the prompts (``compiled.drawn_gaps``'s fast inverse) against ``np.interp`` on the table
    of F: within 4e-9 where the uniform grid of F's values is used, equal in the tails."""
    from onenn.theory.reduced.population import nodes

    q = quadrature(N, D, 64, 32, 0)
    at = nodes(xi1, xi2, q)
    y = q.uniforms * at.cdf_third
    expected = np.minimum(np.interp(y, q.table_cdf, q.table_t), at.third) - at.t1
    drawn = at.prepared.gaps[2:]
    bulk = (y >= q.inverse_range[0]) & (y <= q.inverse_range[1])
    assert bulk.mean() > 0.5 and (~bulk).sum() > 100  # both ways are taken
    assert np.abs(drawn - expected)[bulk].max() < 4e-9
    np.testing.assert_array_equal(drawn[~bulk], expected[~bulk])
    np.testing.assert_array_equal(at.prepared.gaps_min, at.prepared.gaps.min(axis=0))


def test_the_drawn_sums_are_numpys():
    """``drawn_sums`` (``compiled.exp_sums``) against the numpy expression, number for number."""
    from onenn.theory.reduced.loss import _shift
    from onenn.theory.reduced.population import drawn_sums, nodes

    q = quadrature(N, D, 64, 32, 0)
    for xi1, xi2 in [(0.0, 3.0), (5.0, 4.0), (-3.0, 1.0)]:
        p = nodes(xi1, xi2, q).prepared
        for gaps in (p.gaps[2:], p.gaps[:2]):
            e = np.exp(xi1 * gaps - _shift(xi1, xi2, p.gap_query, p.gaps_min))
            expected = np.stack([e.sum(0), (e * e).sum(0), (e * e * gaps).sum(0), (e * gaps).sum(0)])
            np.testing.assert_array_equal(drawn_sums(xi1, gaps, _shift(xi1, xi2, p.gap_query, p.gaps_min)), expected)
