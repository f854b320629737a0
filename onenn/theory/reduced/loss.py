"""The reduced loss on a fixed sample of inner products ``t`` (n, N), its exact gradient in ``(xi1, xi2)``, its
Monte-Carlo error, and the loss landscape on a grid.

Derivation of the reduced binary loss (labels integrated out)
-------------------------------------------------------------
Scores: ``s_j = xi1 t_j`` for the context (``j <= N``) and ``s_0 = xi1 - xi2`` for the query attending to
itself (``<x_q, x_q> = 1`` gives ``xi1``, the last coordinate gives ``-xi2``). With ``q = softmax(s)`` over
the ``N + 1`` scores the binary output is ``l = sum_{j<=N} q_j y_j`` (the query's label slot is 0). For labels
``y_j`` independent of ``t``, independent of each other, with ``E y = 0`` and ``E y^2 = 1``::

    E_y (l - y_{i*})^2 = sum_{j,k} q_j q_k E[y_j y_k] - 2 sum_j q_j E[y_j y_{i*}] + E[y_{i*}^2]
                       = sum_j q_j^2 - 2 q_{i*} + 1,

so ``L_bin(xi1, xi2) = 1/2 E_t[sum_j q_j^2 - 2 q_{i*} + 1]`` with ``i* = argmax_j t_j``. For numerical
stability we use the equivalent form ``1/2 E_t[r^2 + sum_{j != i*} q_j^2]`` with
``r = 1 - q_{i*} = sum_{k != i*} q_k`` (the sum includes the query), which never subtracts numbers near 1.
The multiclass loss on the family is ``L_MC = ((K-1)/K) L_bin`` (Lemma 2 of the multiclass paper; docs/method.md §4.3).

Gradient: with ``f = 1/2 (sum_j q_j^2 - 2 q_{i*} + 1)`` put ``g_j = df/dq_j = q_j - [j = i*]`` for the
context and ``g_0 = 0`` for the query, and ``gbar = sum_k q_k g_k = sum_{j != i*} q_j^2 - q_{i*} r``. The
softmax Jacobian gives ``df/ds_k = q_k (g_k - gbar)``; these sum to zero, so with ``t_0 := 1``::

    dL/dxi1 = E sum_k q_k (g_k - gbar)(t_k - t_{i*})
            = E[ sum_{j != i*} q_j^2 gap_j - gbar (sum_{j != i*} q_j gap_j + q_0 (1 - t_{i*})) ],
    dL/dxi2 = -E[df/ds_0] = E[q_0 gbar],

where ``gap_j = t_j - t_{i*} <= 0``. Subtracting ``t_{i*}`` removes the ``i*`` term, which would otherwise
cancel against the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from onenn.theory.reduced.checks import check_finite, check_integer

#: Prompts per chunk: keeps temporaries near the CPU cache (31 x 4096 float64 = 1 MB).
_CHUNK_ROWS = 4096


def _check_inner_products(t: np.ndarray) -> np.ndarray:
    """Return ``t`` as float64, raising if it is not an ``(prompts, N)`` array with entries in [-1, 1]."""
    t = np.asarray(t, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] < 1 or t.shape[1] < 1:
        raise ValueError(f"t must be a 2-d array of shape (prompts >= 1, N >= 1), got shape {t.shape}")
    if not np.all(np.isfinite(t)) or np.any(np.abs(t) > 1.0):
        raise ValueError("t must hold finite inner products in [-1, 1]")
    return t


def loss_scale(K: int | None) -> float:
    """Factor multiplying ``L_bin``: 1 for the binary loss (``K=None``), else ``(K-1)/K``."""
    if K is None:
        return 1.0
    check_integer("K", K, minimum=2)
    return (K - 1) / K


def attention_weights(xi1: float, xi2: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Query attention ``(q_context (n, N), q_query (n,))`` on the family, via a stable log-sum-exp.

    ``q_j = exp(xi1 t_j) / (sum_l exp(xi1 t_l) + exp(xi1 - xi2))``; ``q_query`` is the query's weight on
    itself, ``exp(xi1 - xi2) / (same denominator)``.
    """
    check_finite("xi1", xi1)
    check_finite("xi2", xi2)
    t = _check_inner_products(t)
    scores = xi1 * t  # (n, N)
    score_query = np.full(t.shape[0], xi1 - xi2)  # (n,)
    shift = np.maximum(scores.max(axis=1), score_query)  # (n,)
    e = np.exp(scores - shift[:, None])
    e_query = np.exp(score_query - shift)
    z = e.sum(axis=1) + e_query
    return e / z[:, None], e_query / z


@dataclass(frozen=True)
class Prepared:
    """A sample of ``t`` rearranged around its nearest neighbour ``i* = argmax_j t_j``."""

    gaps: np.ndarray  # (N-1, n), prompts innermost: t_j - t_{i*} for j != i*, all <= 0
    gaps_min: np.ndarray  # (n,): the smallest gap (0 when N = 1)
    gap_query: np.ndarray  # (n,): 1 - t_{i*} >= 0, the query's own inner product minus t_{i*}
    weight: np.ndarray | None = None  # (n,): probability weights summing to 1 (None: the plain mean)


def _check_weights(weights: np.ndarray | None, prompts: int) -> np.ndarray | None:
    """Weights normalised to sum to 1, or None; raises unless they are ``prompts`` finite numbers >= 0."""
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (prompts,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be {prompts} finite numbers >= 0 with a positive sum (one per prompt of t)")
    return w / w.sum()


def prepare(t: np.ndarray, weights: np.ndarray | None = None) -> Prepared:
    """Sort each row of ``t`` descending and store the gaps to the row maximum (and the prompts' weights).

    The gaps are stored with the prompts innermost, ``(N-1, n)``: every sum over a prompt's context is then a
    sum of ``N-1`` contiguous vectors, which numpy vectorises (a sum along short rows of 31 numbers is slow)."""
    t = _check_inner_products(t)
    weight = _check_weights(weights, t.shape[0])
    t_sorted = -np.sort(-t, axis=1)  # (n, N), descending
    t_max = t_sorted[:, 0]
    gaps = np.ascontiguousarray((t_sorted[:, 1:] - t_max[:, None]).T)  # (N-1, n)
    gaps_min = gaps[-1].copy() if gaps.shape[0] else np.zeros_like(t_max)
    return Prepared(gaps=gaps, gaps_min=gaps_min, gap_query=1.0 - t_max, weight=weight)


def _per_prompt(
    xi1: float,
    xi2: float,
    gaps: np.ndarray,
    gaps_min: np.ndarray,
    gap_query: np.ndarray,
    with_grad: bool,
    buffers: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, ...]:
    """Per-prompt binary loss (and gradient in xi1, xi2) for one chunk of a prepared sample: the definition.

    This numpy version is the readable reference; the runs use its compiled twin
    (``onenn.theory.reduced.compiled.per_prompt``, through ``_per_prompt_all``), which the tests hold to it.

    ``gaps`` is ``(N-1, n)``, the prompts innermost; every per-prompt result is ``(n,)``. ``buffers``: two
    scratch arrays of at least ``gaps``' shape (made here when None)."""
    # Shift every score by its row maximum: scores relative to s_{i*} are xi1*gap_j (context),
    # 0 (i*) and xi1*gap_query - xi2 (query). The context's weights are e_j = exp(xi1 gap_j - shift).
    shift = np.maximum(0.0, xi1 * gap_query - xi2)  # (n,)
    if xi1 < 0:
        shift = np.maximum(shift, xi1 * gaps_min)
    e, work = (np.empty_like(gaps), np.empty_like(gaps)) if buffers is None else buffers
    e, work = e[:, : gaps.shape[1]], work[:, : gaps.shape[1]]
    np.multiply(gaps, xi1, out=e)  # (N-1, n)
    if xi1 < 0:
        e -= shift  # exp(xi1 gap_j) could overflow: shift first, and c = 1
        c = np.ones_like(shift)
    else:
        c = np.exp(-shift)  # exp(xi1 gap_j) <= 1: factor exp(-shift) out of the context sums (a pass fewer)
    np.exp(e, out=e)
    e_star = np.exp(-shift)
    e_query = np.exp(xi1 * gap_query - xi2 - shift)
    s1 = e.sum(axis=0)
    s = c * s1
    z = e_star + s + e_query  # >= 1: one shifted score is 0
    r = (s + e_query) / z  # 1 - q_{i*}, without cancellation
    cz2 = (c / z) ** 2
    s2 = np.einsum("jn,jn->n", e, e)
    sum_sq = s2 * cz2  # sum_{j != i*} q_j^2
    loss = 0.5 * (r * r + sum_sq)
    if not with_grad:
        return (loss,)
    q_query = e_query / z
    if xi1 < 0:
        gbar = sum_sq - (e_star / z) * r
    else:
        # gbar = sum_{j != i*} q_j^2 - q_{i*} (1 - q_{i*}). With c = e_star this is cz2 (s2 - s1) - q_{i*} q_query:
        # exact where every e_j is 1 (xi1 = 0), where the other form loses q_{i*} q_query ~ e^{-xi2} to rounding
        gbar = (s2 - s1) * cz2 - (e_star / z) * q_query
    sum_q_gaps = np.einsum("jn,jn->n", e, gaps) * (c / z)  # sum_{j != i*} q_j gap_j
    np.multiply(e, gaps, out=work)
    sum_sq_gaps = np.einsum("jn,jn->n", work, e) * cz2  # sum_{j != i*} q_j^2 gap_j
    grad_xi1 = sum_sq_gaps - gbar * (sum_q_gaps + q_query * gap_query)
    grad_xi2 = q_query * gbar
    return loss, grad_xi1, grad_xi2


def _per_prompt_all(xi1: float, xi2: float, prep: Prepared, with_grad: bool, compiled: bool = True) -> list[np.ndarray]:
    """Per-prompt binary loss (and gradient) over the whole prepared sample.

    By default by ``onenn.theory.reduced.compiled.per_prompt``, one compiled pass over the sample (numba, loaded on
    first use); with ``compiled=False`` by ``_per_prompt``, the definition, in chunks of ``_CHUNK_ROWS`` prompts.
    The two agree to float64 round-off (tests/unit/test_reduced_compiled.py)."""
    if compiled:
        return _per_prompt_compiled(float(xi1), float(xi2), prep)[: 3 if with_grad else 1]
    prompts = prep.gap_query.shape[0]
    shape = (prep.gaps.shape[0], min(prompts, _CHUNK_ROWS))
    buffers = (np.empty(shape), np.empty(shape))
    parts: list[tuple[np.ndarray, ...]] = []
    for lo in range(0, prompts, _CHUNK_ROWS):
        hi = min(lo + _CHUNK_ROWS, prompts)
        chunk = (prep.gaps[:, lo:hi], prep.gaps_min[lo:hi], prep.gap_query[lo:hi])
        parts.append(_per_prompt(xi1, xi2, *chunk, with_grad, buffers))
    return [np.concatenate([p[i] for p in parts]) for i in range(len(parts[0]))]


def _per_prompt_compiled(xi1: float, xi2: float, prep: Prepared) -> list[np.ndarray]:
    """``[loss, grad_xi1, grad_xi2]`` per prompt by the compiled pass (contiguous float64 arrays, as it is compiled)."""
    from onenn.theory.reduced.compiled import per_prompt  # numba: imported where it is used

    values = [np.empty(prep.gap_query.shape[0]) for _ in range(3)]
    arrays = (prep.gaps, prep.gaps_min, prep.gap_query)
    per_prompt(xi1, xi2, *(np.ascontiguousarray(a, dtype=np.float64) for a in arrays), *values)
    return values


def _mean(values: np.ndarray, prep: Prepared) -> float:
    """The sample mean, or the weighted mean when the sample carries weights."""
    return float(values.mean()) if prep.weight is None else float(values @ prep.weight)


def loss_prepared(xi1: float, xi2: float, prep: Prepared) -> float:
    return _mean(_per_prompt_all(xi1, xi2, prep, with_grad=False)[0], prep)


def loss_grad_prepared(xi1: float, xi2: float, prep: Prepared) -> tuple[float, float, float]:
    loss, g1, g2 = _per_prompt_all(xi1, xi2, prep, with_grad=True)
    return _mean(loss, prep), _mean(g1, prep), _mean(g2, prep)


def reduced_loss(
    xi1: float, xi2: float, t: np.ndarray, K: int | None = None, weights: np.ndarray | None = None
) -> float:
    """Sample estimate of ``L_bin(xi1, xi2)`` (or ``L_MC`` when ``K`` is given) on the fixed ``t``.

    ``weights`` (one per prompt, e.g. from ``sampling.audit_sample``) turn the mean into a weighted mean.
    """
    check_finite("xi1", xi1)
    check_finite("xi2", xi2)
    return loss_scale(K) * loss_prepared(xi1, xi2, prepare(t, weights))


def reduced_loss_and_grad(
    xi1: float, xi2: float, t: np.ndarray, K: int | None = None, weights: np.ndarray | None = None
) -> tuple[float, float, float]:
    """``(L, dL/dxi1, dL/dxi2)`` on the fixed sample ``t``: the exact gradient of the sample loss."""
    check_finite("xi1", xi1)
    check_finite("xi2", xi2)
    scale = loss_scale(K)
    loss, g1, g2 = loss_grad_prepared(xi1, xi2, prepare(t, weights))
    return scale * loss, scale * g1, scale * g2


class MonteCarloEstimate(NamedTuple):
    """Sample means over prompts and their standard errors (sd / sqrt(prompts))."""

    loss: float
    grad_xi1: float
    grad_xi2: float
    loss_se: float
    grad_xi1_se: float
    grad_xi2_se: float


def monte_carlo_estimate(
    xi1: float, xi2: float, t: np.ndarray, K: int | None = None, weights: np.ndarray | None = None
) -> MonteCarloEstimate:
    """Loss and gradient on ``t`` with their Monte-Carlo standard errors, to show the sampling error is small.

    The labels are integrated exactly, so the only randomness is the draw of ``t``; the standard error is
    the per-prompt standard deviation over ``sqrt(prompts)``. With ``weights`` (normalised to ``w``) it is
    ``sqrt(sum_i w_i^2 (v_i - mean)^2)``, which ignores the variance reduction of stratification (an upper
    bound for the stratified sampler).
    """
    check_finite("xi1", xi1)
    check_finite("xi2", xi2)
    return _estimate(xi1, xi2, prepare(t, weights), loss_scale(K))


def monte_carlo_estimates(
    xi1: np.ndarray, xi2: np.ndarray, t: np.ndarray, K: int | None = None, weights: np.ndarray | None = None
) -> list[MonteCarloEstimate]:
    """``monte_carlo_estimate`` at every point ``(xi1[k], xi2[k])`` of a trajectory, the sample prepared once."""
    prep, scale = prepare(t, weights), loss_scale(K)
    points = [(float(a), float(b)) for a, b in zip(xi1, xi2, strict=True)]
    for a, b in points:
        check_finite("xi1", a)
        check_finite("xi2", b)
    return [_estimate(a, b, prep, scale) for a, b in points]


def _estimate(xi1: float, xi2: float, prep: Prepared, scale: float) -> MonteCarloEstimate:
    values = _per_prompt_all(xi1, xi2, prep, with_grad=True)
    prompts = values[0].shape[0]
    means = [_mean(v, prep) for v in values]
    if prompts < 2:
        ses = [math.nan] * len(values)
    elif prep.weight is None:
        ses = [float(v.std(ddof=1)) / math.sqrt(prompts) for v in values]
    else:
        ses = [math.sqrt(float((prep.weight**2) @ (v - m) ** 2)) for v, m in zip(values, means)]
    return MonteCarloEstimate(*(scale * m for m in means), *(scale * s for s in ses))


def loss_landscape(
    xi1_grid: np.ndarray,
    xi2_grid: np.ndarray,
    t: np.ndarray,
    K: int | None = None,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The reduced loss on the grid and its standard error (``monte_carlo_estimate`` at every point), on one
    sample ``t``: two arrays of shape ``(len(xi1_grid), len(xi2_grid))`` (``'ij'`` indexing).

    Computed a row of the grid at a time (``_landscape_row``): the context's sums depend on ``xi1`` only."""
    xi1_grid = np.asarray(xi1_grid, dtype=np.float64).ravel()
    xi2_grid = np.asarray(xi2_grid, dtype=np.float64).ravel()
    for name, grid in (("xi1_grid", xi1_grid), ("xi2_grid", xi2_grid)):
        if grid.size == 0 or not np.all(np.isfinite(grid)):
            raise ValueError(f"{name} must be a non-empty array of finite numbers")
    prep = prepare(t, weights)
    scale = loss_scale(K)
    loss = np.empty((xi1_grid.size, xi2_grid.size))
    loss_se = np.empty_like(loss)
    block = max(1, _LANDSCAPE_NUMBERS // prep.gap_query.size)  # xi2 values at once
    for i, xi1 in enumerate(xi1_grid):
        for lo in range(0, xi2_grid.size, block):
            hi = min(lo + block, xi2_grid.size)
            loss[i, lo:hi], loss_se[i, lo:hi] = _landscape_row(float(xi1), xi2_grid[lo:hi], prep, scale)
    return loss, loss_se


#: numbers in one block of ``_landscape_row``'s (xi2, prompt) arrays
_LANDSCAPE_NUMBERS = 1 << 20


def _landscape_row(xi1: float, xi2: np.ndarray, prep: Prepared, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """``(loss, loss_se)`` at ``(xi1, xi2[k])`` for every ``k``: the numbers of ``_estimate``, for a whole row.

    ``_per_prompt``'s context sums ``sum_j exp(xi1 gap_j - shift)`` and ``sum_j exp(2 (xi1 gap_j - shift))``
    depend on ``xi2`` only through the factor ``exp(-shift)``: they are summed once per ``xi1`` (with the part
    ``b`` of the shift that does not depend on ``xi2``) and scaled by ``c = exp(b - shift)`` for each ``xi2``."""
    base = np.maximum(0.0, xi1 * prep.gaps_min) if xi1 < 0 else np.zeros_like(prep.gap_query)  # (n,)
    e = xi1 * prep.gaps  # (N-1, n)
    e -= base
    np.exp(e, out=e)
    sum_e = e.sum(axis=0)  # (n,)
    sum_e2 = np.einsum("jn,jn->n", e, e)
    score_query = xi1 * prep.gap_query - xi2[:, None]  # (k, n)
    shift = np.maximum(base, score_query)  # as _per_prompt's: max(0, xi1 gap_query - xi2[, xi1 gaps_min])
    c = np.exp(base - shift)
    e_star = np.exp(-shift)
    e_query = np.exp(score_query - shift)
    s = c * sum_e
    z = e_star + s + e_query
    r = (s + e_query) / z
    per = 0.5 * (r * r + sum_e2 * (c / z) ** 2)  # (k, n): per-prompt loss
    prompts = per.shape[1]
    if prep.weight is None:
        mean = per.mean(axis=1)
        se = per.std(axis=1, ddof=1) / math.sqrt(prompts) if prompts > 1 else np.full(len(xi2), math.nan)
    else:
        mean = per @ prep.weight
        se = np.sqrt(((per - mean[:, None]) ** 2) @ prep.weight**2) if prompts > 1 else np.full(len(xi2), math.nan)
    return scale * mean, scale * se
