"""The reduced loss on a fixed sample of inner products ``t`` (n, N): the readable float64 reference of the reduced
family (``_per_prompt``: per-prompt loss and exact gradient in ``(xi1, xi2)``), its means and Monte-Carlo errors,
and the landscape (docs/method.md §4.3). ``compiled.per_prompt`` is its port for speed.

With ``q = softmax(s)`` over the scores ``s_j = xi1 t_j`` and ``s_0 = xi1 - xi2`` (the query) and the labels
integrated out, a prompt's loss is ``f = 1/2 (r^2 + sum_{j != i*} q_j^2)``, ``r = 1 - q_{i*}``; with
``gbar = sum_{j != i*} q_j^2 - q_{i*} r`` and ``gap_j = t_j - t_{i*}``::

    df/dxi1 = sum_{j != i*} q_j^2 gap_j - gbar (sum_{j != i*} q_j gap_j + q_0 (1 - t_{i*})),   df/dxi2 = q_0 gbar.
"""

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from onenn.theory.reduced.sampling import check_finite, check_integer

#: Prompts per chunk: keeps temporaries near the CPU cache (31 x 4096 float64 = 1 MB).
_CHUNK_ROWS = 4096


def loss_scale(K: int | None) -> float:
    """Factor multiplying ``L_bin``: 1 for the binary loss (``K=None``), else ``(K-1)/K``."""
    if K is None:
        return 1.0
    check_integer("K", K, minimum=2)
    return (K - 1) / K


@dataclass(frozen=True)
class Prepared:
    """A sample of ``t`` rearranged around its nearest neighbour ``i* = argmax_j t_j``."""

    gaps: np.ndarray  # (N-1, n), prompts innermost: t_j - t_{i*} for j != i*, all <= 0
    gaps_min: np.ndarray  # (n,): the smallest gap (0 when N = 1)
    gap_query: np.ndarray  # (n,): 1 - t_{i*} >= 0, the query's own inner product minus t_{i*}
    weight: np.ndarray | None = None  # (n,): probability weights summing to 1 (None: the plain mean)


def prepare(t: np.ndarray, weights: np.ndarray | None = None) -> Prepared:
    """``t`` as ``Prepared``, the prompts innermost: a sum over the context is then a sum of contiguous vectors."""
    t = np.asarray(t, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] < 1 or t.shape[1] < 1:
        raise ValueError(f"t must be a 2-d array of shape (prompts >= 1, N >= 1), got shape {t.shape}")
    if not np.all(np.isfinite(t)) or np.any(np.abs(t) > 1.0):
        raise ValueError("t must hold finite inner products in [-1, 1]")
    weight = None
    if weights is not None:
        weight = np.asarray(weights, dtype=np.float64)
        if weight.shape != t.shape[:1] or not np.all(np.isfinite(weight)) or np.any(weight < 0) or weight.sum() <= 0:
            raise ValueError(
                f"weights must be {t.shape[0]} finite numbers >= 0 with a positive sum (one per prompt of t)"
            )
        weight = weight / weight.sum()
    t_sorted = -np.sort(-t, axis=1)  # (n, N), descending
    t_max = t_sorted[:, 0]
    gaps = np.ascontiguousarray((t_sorted[:, 1:] - t_max[:, None]).T)  # (N-1, n)
    gaps_min = gaps[-1].copy() if gaps.shape[0] else np.zeros_like(t_max)
    return Prepared(gaps=gaps, gaps_min=gaps_min, gap_query=1.0 - t_max, weight=weight)


def _per_prompt(
    xi1: float, xi2: float, gaps: np.ndarray, gaps_min: np.ndarray, gap_query: np.ndarray, with_grad: bool
) -> tuple[np.ndarray, ...]:
    """Per-prompt binary loss (and gradient in xi1, xi2) for one chunk of a prepared sample: the reference."""
    # Shift every score by its row maximum: scores relative to s_{i*} are xi1*gap_j (context),
    # 0 (i*) and xi1*gap_query - xi2 (query). The context's weights are e_j = exp(xi1 gap_j - shift).
    shift = _shift(xi1, xi2, gap_query, gaps_min)  # (n,)
    e = gaps * xi1  # (N-1, n)
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
    sum_sq_gaps = np.einsum("jn,jn->n", e * gaps, e) * cz2  # sum_{j != i*} q_j^2 gap_j
    grad_xi1 = sum_sq_gaps - gbar * (sum_q_gaps + q_query * gap_query)
    grad_xi2 = q_query * gbar
    return loss, grad_xi1, grad_xi2


def _shift(xi1: float, xi2: float, gap_query: np.ndarray, gaps_min: np.ndarray) -> np.ndarray:
    """The row maximum of the scores relative to ``s_{i*}``: ``max(0, xi1 gap_query - xi2[, xi1 gaps_min])``."""
    shift = np.maximum(0.0, xi1 * gap_query - xi2)
    return np.maximum(shift, xi1 * gaps_min) if xi1 < 0 else shift


def _per_prompt_all(xi1: float, xi2: float, prep: Prepared, with_grad: bool, compiled: bool = True) -> list[np.ndarray]:
    """Per-prompt binary loss (and gradient) over the sample: by the compiled port, or by the reference in chunks."""
    if compiled:
        from onenn.theory.reduced.compiled import per_prompt  # numba: imported where it is used

        values = [np.empty(prep.gap_query.shape[0]) for _ in range(3)]
        arrays = (prep.gaps, prep.gaps_min, prep.gap_query)
        per_prompt(float(xi1), float(xi2), *(np.ascontiguousarray(a, dtype=np.float64) for a in arrays), *values)
        return values[: 3 if with_grad else 1]
    prompts = prep.gap_query.shape[0]
    parts: list[tuple[np.ndarray, ...]] = []
    for lo in range(0, prompts, _CHUNK_ROWS):
        hi = min(lo + _CHUNK_ROWS, prompts)
        chunk = (prep.gaps[:, lo:hi], prep.gaps_min[lo:hi], prep.gap_query[lo:hi])
        parts.append(_per_prompt(xi1, xi2, *chunk, with_grad))
    return [np.concatenate([p[i] for p in parts]) for i in range(len(parts[0]))]


def _mean(values: np.ndarray, prep: Prepared) -> float:
    """The sample mean, or the weighted mean when the sample carries weights."""
    return float(values.mean()) if prep.weight is None else float(values @ prep.weight)


def loss_grad_prepared(xi1: float, xi2: float, prep: Prepared) -> tuple[float, float, float]:
    loss, g1, g2 = _per_prompt_all(xi1, xi2, prep, with_grad=True)
    return _mean(loss, prep), _mean(g1, prep), _mean(g2, prep)


def reduced_loss(
    xi1: float, xi2: float, t: np.ndarray, K: int | None = None, weights: np.ndarray | None = None
) -> float:
    """``L_bin(xi1, xi2)`` (``L_MC`` for ``K``) on the fixed ``t``, the mean weighted by ``weights`` if given."""
    return monte_carlo_estimate(xi1, xi2, t, K, weights).loss


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
    """Loss and gradient on ``t`` with their Monte-Carlo standard errors (``_standard_error``)."""
    return monte_carlo_estimates([xi1], [xi2], t, K, weights)[0]


def monte_carlo_estimates(
    xi1: np.ndarray, xi2: np.ndarray, t: np.ndarray, K: int | None = None, weights: np.ndarray | None = None
) -> list[MonteCarloEstimate]:
    """``monte_carlo_estimate`` at every point ``(xi1[k], xi2[k])`` of a trajectory, the sample prepared once."""
    prep, scale, out = prepare(t, weights), loss_scale(K), []
    for a, b in zip(xi1, xi2, strict=True):
        check_finite("xi1", a)
        check_finite("xi2", b)
        values = _per_prompt_all(float(a), float(b), prep, with_grad=True)
        means, ses = [_mean(v, prep) for v in values], [_standard_error(v, prep) for v in values]
        out.append(MonteCarloEstimate(*(scale * m for m in means), *(scale * s for s in ses)))
    return out


def _standard_error(v: np.ndarray, prep: Prepared) -> float:
    """The mean's standard error: ``sd / sqrt(prompts)``, or ``sqrt(sum_i w_i^2 (v_i - mean)^2)`` with weights."""
    if v.shape[0] < 2:
        return math.nan
    if prep.weight is None:
        return float(v.std(ddof=1)) / math.sqrt(v.shape[0])
    return math.sqrt(float((prep.weight**2) @ (v - _mean(v, prep)) ** 2))


def loss_landscape(
    xi1_grid: np.ndarray, xi2_grid: np.ndarray, t: np.ndarray, K: int | None = None, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The reduced loss and its standard error on the grid (``'ij'`` indexing), one sample ``t``, by ``_per_prompt``."""
    xi1_grid, xi2_grid = (np.asarray(grid, dtype=np.float64).ravel() for grid in (xi1_grid, xi2_grid))
    for name, grid in (("xi1_grid", xi1_grid), ("xi2_grid", xi2_grid)):
        if grid.size == 0 or not np.all(np.isfinite(grid)):
            raise ValueError(f"{name} must be a non-empty array of finite numbers")
    prep, scale = prepare(t, weights), loss_scale(K)
    loss = np.empty((xi1_grid.size, xi2_grid.size))
    loss_se = np.empty_like(loss)
    for i, xi1 in enumerate(xi1_grid):
        for j, xi2 in enumerate(xi2_grid):
            values = _per_prompt_all(float(xi1), float(xi2), prep, with_grad=False, compiled=False)[0]
            loss[i, j], loss_se[i, j] = scale * _mean(values, prep), scale * _standard_error(values, prep)
    return loss, loss_se
