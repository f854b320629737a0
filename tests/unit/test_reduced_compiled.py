"""The compiled per-prompt loss and gradient (onenn.theory.reduced.compiled) against the numpy definition
(``loss._per_prompt``) and its exponential against numpy's."""

from __future__ import annotations

import numpy as np
import pytest

from onenn.theory.reduced import compiled
from onenn.theory.reduced.loss import _per_prompt_all, loss_grad_prepared, monte_carlo_estimate, prepare
from onenn.theory.reduced.population import quadrature
from onenn.theory.reduced.sampling import audit_sample, sample_inner_products

#: xi1 negative, zero, positive and large (the query's shift, the underflow of the context's exp(xi1 gap))
POINTS = [(0.0, 3.0), (2.0, 5.0), (-3.0, 1.0), (-40.0, -5.0), (8.0, -4.0), (30.0, 60.0), (300.0, 500.0), (1e4, 1.2e4)]


def _sample(prompts: int, N: int, weighted: bool, seed: int = 3) -> tuple[np.ndarray, np.ndarray | None]:
    rng = np.random.default_rng(seed)
    t = sample_inner_products(prompts, N, 8, rng)
    return t, (rng.random(prompts) if weighted else None)


def _max_difference(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| relative to the largest |want| of the sample (per-prompt gradients may cancel to ~0)."""
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300))


@pytest.mark.parametrize("xi", POINTS)
@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_equals_the_numpy_definition(xi: tuple[float, float], weighted: bool) -> None:
    """Per prompt and in the (weighted) mean, on more prompts than a block holds, the last block partial."""
    t, w = _sample(5 * compiled._BLOCK + 37, 32, weighted)
    prep = prepare(t, w)
    want = _per_prompt_all(*xi, prep, with_grad=True, compiled=False)
    got = _per_prompt_all(*xi, prep, with_grad=True)
    for g, v in zip(got, want, strict=True):
        assert _max_difference(g, v) < 1e-12
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)  # the loss has no cancellation: relative per prompt
    weight = np.full(t.shape[0], 1.0 / t.shape[0]) if w is None else w / w.sum()
    means = np.array([v @ weight for v in want])
    np.testing.assert_allclose(loss_grad_prepared(*xi, prep), means, rtol=1e-12, atol=1e-15 * np.abs(means).max())
    assert loss_grad_prepared(*xi, prep)[0] == pytest.approx(means[0], rel=1e-12)


@pytest.mark.parametrize("N", [1, 2, 3])
@pytest.mark.parametrize("xi", [(0.0, 3.0), (-3.0, 1.0), (30.0, 60.0)])
def test_short_contexts(N: int, xi: tuple[float, float]) -> None:
    """N = 1 (no gap: only i* and the query) and N = 2 (one gap row) as the definition has them."""
    t, _ = _sample(300, N, weighted=False)
    prep = prepare(t)
    want = _per_prompt_all(*xi, prep, with_grad=True, compiled=False)
    got = _per_prompt_all(*xi, prep, with_grad=True)
    for g, v in zip(got, want, strict=True):
        assert _max_difference(g, v) < 1e-12


def test_the_weighted_audit_sample_and_its_standard_errors() -> None:
    """The audit's stratified sample (gaps down to 1e-8) and the Monte-Carlo standard errors from the per-prompt
    values: compiled and numpy give the same estimate."""
    t, w, _ = audit_sample(2048, 16, 16, 32, 8, np.random.default_rng(4), 1e-8)
    prep = prepare(t, w)
    for xi in [(0.0, 3.0), (20.0, 40.0), (500.0, 700.0)]:
        want = _per_prompt_all(*xi, prep, with_grad=True, compiled=False)
        got = _per_prompt_all(*xi, prep, with_grad=True)
        for g, v in zip(got, want, strict=True):
            assert _max_difference(g, v) < 1e-12
        est = monte_carlo_estimate(*xi, t, weights=w)
        weight = prep.weight
        se = np.sqrt(weight**2 @ (want[0] - want[0] @ weight) ** 2)
        assert est.loss == pytest.approx(float(want[0] @ weight), rel=1e-12)
        assert est.loss_se == pytest.approx(float(se), rel=1e-9)


def test_exp_is_within_an_ulp_or_two_of_numpy() -> None:
    """``_exp_nonpositive`` against ``np.exp`` from 0 to below the smallest subnormal (where both give 0)."""
    x = np.concatenate([-np.geomspace(1e-300, 800.0, 200_001), [0.0, -0.0, -1400.0, -1e6, -np.inf]])
    got = np.empty_like(x)
    bits = np.empty(x.size, dtype=np.int64), np.empty(x.size, dtype=np.int64)
    compiled._exp_nonpositive(x, got, *bits, x.size)
    want = np.exp(x)
    normal = want >= np.finfo(np.float64).tiny
    assert np.max(np.abs(got[normal] - want[normal]) / np.spacing(want[normal])) <= 2
    assert np.max(np.abs(got[~normal] - want[~normal])) <= 2 * np.finfo(np.float64).smallest_subnormal
    assert got[-3:].tolist() == [0.0, 0.0, 0.0]


def test_interp_gives_numpys_numbers_on_the_population_table() -> None:
    """``compiled.interp`` with its guide equals ``np.interp`` bit for bit on the quadrature's table of F (flat
    stretches of equal values at both ends), at its entries, between them, outside, at the ends and at NaN."""
    q = quadrature(32, 8, 32, 8, 0)
    rng = np.random.default_rng(6)
    x = np.concatenate(
        [
            (q.uniforms * rng.random(q.uniforms.shape[1])).ravel(),
            q.table_cdf[::5],
            1.0 - rng.random(500) * 1e-14,
            rng.random(500) * 1e-18,
            [-1.0, -0.0, 0.0, 1.0, 2.0, np.nan, np.inf, -np.inf],
        ]
    )
    got = np.empty_like(x)
    compiled.interp(x, q.table_cdf, q.table_t, q.table_guide, got)
    np.testing.assert_array_equal(got, np.interp(x, q.table_cdf, q.table_t))


def test_interp_on_a_table_with_repeated_entries() -> None:
    """Equal ``xp`` in the middle and at the ends (the last of the equal entries is the bracket's), entries in both
    parts of the guide (below ``GUIDE_SPLIT`` by binades, far below it, above it evenly)."""
    xp = np.array([0.0, 0.0, 1e-300, 1e-30, 1e-30, 1e-5, 1e-3, 0.1, 0.1, 0.1, 0.4, 0.5, 0.5, 0.9, 1.0, 1.0])
    fp = np.arange(xp.size, dtype=np.float64) ** 1.5
    x = np.concatenate([np.linspace(-0.2, 1.2, 1001), np.geomspace(1e-310, 1e-2, 1001), xp, np.nextafter(xp, 2)])
    got = np.empty_like(x)
    compiled.interp(x, xp, fp, compiled.interp_guide(xp), got)
    np.testing.assert_array_equal(got, np.interp(x, xp, fp))


@pytest.mark.parametrize("compiled_pass", [True, False])
@pytest.mark.parametrize("xi2", [3.0, 56.14, 100.0])
def test_at_xi1_zero_the_query_gradient_is_its_closed_form_however_small(compiled_pass, xi2):
    """At xi1 = 0 every context point has weight 1 and the query e^{-xi2} =: a, so with z = N + a the prompt's
    q_{i*} = 1/z, gbar = sum_j q_j^2 - q_{i*}(1 - q_{i*}) = -a / z^2 and dL/dxi2 = q_query gbar = -a^2 / z^3 exactly:
    at xi2 = 56.14 about 5e-54, far below the rounding of sum q_j^2 against q_{i*}(1 - q_{i*}) (about 1e-18), which
    the definition must not lose (the population flow starts there; Lemma 11 compares it with e^{-2 xi2})."""
    N = 32
    t = sample_inner_products(64, N, 8, np.random.default_rng(5))
    loss, _, g2 = _per_prompt_all(0.0, xi2, prepare(t), with_grad=True, compiled=compiled_pass)
    a = np.exp(-xi2)
    z = N + a
    np.testing.assert_allclose(g2, -(a * a) / z**3, rtol=1e-12, atol=0)
    np.testing.assert_allclose(loss, 0.5 * (((N - 1 + a) / z) ** 2 + (N - 1) / z**2), rtol=1e-13)
