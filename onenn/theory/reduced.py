"""Reduced dynamics on the two-parameter family ``W = diag(xi1 I_d, 0_{KxK}, -xi2)`` (docs/method.md §4, §7).

On the family the loss of a prompt depends on the inputs only through the inner products
``t_j = <x_j, x_{N+1}>`` (i.i.d., ``t = 2 Beta((d-1)/2, (d-1)/2) - 1``), and, once the labels are integrated
out in closed form, only through ``t``. This module samples ``t``, evaluates the reduced loss and its exact
gradient on a fixed sample, runs the full-matrix gradient descent of docs/method.md §4, continues it by gradient
flow in log-time, and computes the thresholds on ``sigma`` of docs/method.md §7.

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
            = E[ sum_{j != i*} q_j^2 delta_j - gbar (sum_{j != i*} q_j delta_j + q_0 (1 - t_{i*})) ],
    dL/dxi2 = -E[df/ds_0] = E[q_0 gbar],

where ``delta_j = t_j - t_{i*} <= 0``. Subtracting ``t_{i*}`` removes the ``i*`` term, which would otherwise
cancel against the rest.

Time convention: gradient descent with step ``eta`` is forward Euler for the flow
``d xi1/dt = -(1/d) dL/dxi1``, ``d xi2/dt = -dL/dxi2`` at time ``t = eta * step``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.integrate import solve_ivp
from scipy.special import betainc, betaincinv, betaln

#: Lemma 12's invariant of the binary paper: ``xi1 <= (7/15) xi2``.
XI_RATIO_BOUND = 7.0 / 15.0

#: Prompts per chunk: keeps temporaries near the CPU cache (8192 x 31 float64 = 2 MB).
_CHUNK_ROWS = 8192


# --------------------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------------------


def _check_positive_int(name: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _check_finite(name: str, value: float) -> None:
    if not (isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _check_inner_products(t: np.ndarray) -> np.ndarray:
    """Return ``t`` as float64, raising if it is not an ``(n_prompts, N)`` array with entries in [-1, 1]."""
    t = np.asarray(t, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] < 1 or t.shape[1] < 1:
        raise ValueError(f"t must be a 2-d array of shape (n_prompts >= 1, N >= 1), got shape {t.shape}")
    if not np.all(np.isfinite(t)) or np.any(np.abs(t) > 1.0):
        raise ValueError("t must hold finite inner products in [-1, 1]")
    return t


def loss_scale(n_classes: int | None) -> float:
    """Factor multiplying ``L_bin``: 1 for the binary loss (``n_classes=None``), else ``(K-1)/K``."""
    if n_classes is None:
        return 1.0
    _check_positive_int("n_classes", n_classes, minimum=2)
    return (n_classes - 1) / n_classes


# --------------------------------------------------------------------------------------------------------
# Sampling and attention
# --------------------------------------------------------------------------------------------------------


def sample_inner_products(n_prompts: int, N: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``t`` of shape ``(n_prompts, N)``: ``t_j = <x_j, x_{N+1}>`` for x i.i.d. uniform on ``S^{d-1}``.

    The ``t_j`` are i.i.d. ``2 Beta((d-1)/2, (d-1)/2) - 1`` (density ``(1-t^2)^{(d-3)/2}``); they are
    independent because, given the query, the context points are independent and each ``t_j`` has a law
    that does not depend on the query.
    """
    _check_positive_int("n_prompts", n_prompts)
    _check_positive_int("N", N)
    _check_positive_int("d", d, minimum=2)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")  # noqa: TRY004 (tests expect ValueError for every bad argument)
    half = (d - 1) / 2.0
    return 2.0 * rng.beta(half, half, size=(n_prompts, N)) - 1.0


def inner_product_density(t: np.ndarray, d: int) -> np.ndarray:
    """Density of ``t = <x, x_q>`` on ``[-1, 1]``: ``(1 - t^2)^((d-3)/2) / (2^(d-2) B((d-1)/2, (d-1)/2))``."""
    half = (d - 1) / 2.0
    t = np.asarray(t, dtype=np.float64)
    log_norm = (2 * half - 1) * math.log(2.0) + betaln(half, half)
    with np.errstate(divide="ignore"):
        return np.clip(1.0 - t * t, 0.0, None) ** (half - 1) * math.exp(-log_norm)  # 0**0 = 1 at d = 3


def inner_product_cdf(t: np.ndarray, d: int) -> np.ndarray:
    """``P(<x, x_q> <= t)``: the regularised incomplete beta function at ``(1 + t)/2``."""
    half = (d - 1) / 2.0
    return betainc(half, half, (1.0 + np.asarray(t, dtype=np.float64)) / 2.0)


def _pair_density(t1: np.ndarray, t2: np.ndarray, N: int, d: int) -> np.ndarray:
    """Joint density of the two largest of ``N`` i.i.d. inner products: ``N (N-1) f(t1) f(t2) F(t2)^(N-2)``."""
    with np.errstate(divide="ignore"):
        log_p = (
            math.log(N * (N - 1))
            + np.log(inner_product_density(t1, d))
            + np.log(inner_product_density(t2, d))
            + (N - 2) * np.log(inner_product_cdf(t2, d))
        )
    return np.exp(log_p)


def _stratified_density(t1: np.ndarray, t2: np.ndarray, gap_min: float) -> np.ndarray:
    """Density of the stratified proposal: ``t_(1)`` uniform on [-1, 1], ``log(g / (1 + t_(1)))`` uniform on
    ``[log gap_min, 0]`` for the gap ``g = t_(1) - t_(2)``."""
    gap = t1 - t2
    inside = (gap >= gap_min * (1.0 + t1)) & (gap > 0)
    with np.errstate(divide="ignore"):
        return np.where(inside, 1.0 / (2.0 * -math.log(gap_min) * np.where(gap > 0, gap, 1.0)), 0.0)


def _below(t2: np.ndarray, size: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` i.i.d. inner products conditioned to lie below each ``t2``: shape ``t2.shape + (size,)``."""
    half = (d - 1) / 2.0
    u = rng.random((*t2.shape, size)) * inner_product_cdf(t2, d)[..., None]
    return np.minimum(2.0 * betaincinv(half, half, u) - 1.0, t2[..., None])  # rounding must not pass t2


def audit_sample(
    n_plain: int,
    n_max: int,
    n_gap: int,
    N: int,
    d: int,
    rng: np.random.Generator,
    gap_min: float = 1e-8,
) -> tuple[np.ndarray, np.ndarray, float]:
    """A weighted sample ``(t (n, N), weights (n,), mass)`` of the population, ``n = n_plain + n_max * n_gap``.

    Why not a plain sample: at large ``xi1`` the loss is carried by rare prompts that ``n`` plain draws miss:
    those whose two largest inner products are within ``~1/xi1`` of each other (the bulk of the loss, which is
    ``~ C/xi1``), and those whose nearest neighbour is far from the query (``t_(1)`` low: the query's own
    weight ``exp(xi1 - xi2)`` competes with ``exp(xi1 t_(1))``; probability ``F(t)^N``, below ``1e-10`` for
    ``t <= 0`` at ``N = 32, d = 8``), which decide how fast ``xi2`` must grow.

    So the sample mixes two proposals for the two largest inner products ``(t_(1), t_(2))``, each followed by
    the other ``N - 2`` drawn i.i.d. below ``t_(2)`` (their exact conditional law):

    - ``n_plain`` plain prompts (the population law): accurate where the loss is large;
    - ``n_max * n_gap`` stratified prompts: ``t_(1)`` drawn once in each of ``n_max`` equal strata of
      ``[-1, 1]``; the gap ``g = t_(1) - t_(2)`` once in each of ``n_gap`` equal strata of ``log(g/(1 + t_(1)))``
      on ``[log gap_min, 0]`` (every scale of the gap; the mass below ``gap_min`` relative is dropped).

    The weights are the balance heuristic of multiple importance sampling,
    ``p / (n_plain p + n_strat q)`` with ``p`` the density of ``(t_(1), t_(2))`` and ``q`` the stratified
    proposal's, normalised to sum to 1; ``mass`` is their raw sum, an unbiased estimate of 1 whose distance
    from 1 shows the sample's accuracy. Rows are not sorted (the loss functions sort).
    """
    for name, value in (("n_plain", n_plain), ("n_max", n_max), ("n_gap", n_gap)):
        _check_positive_int(name, value, minimum=0)
    _check_positive_int("N", N, minimum=2)
    _check_positive_int("d", d, minimum=3)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")  # noqa: TRY004
    if not (0.0 < gap_min < 1.0):
        raise ValueError(f"gap_min must lie in (0, 1), got {gap_min!r}")
    n_strat = n_max * n_gap
    if n_plain + n_strat == 0:
        raise ValueError("n_plain + n_max * n_gap must be >= 1")
    plain = -np.sort(-sample_inner_products(n_plain, N, d, rng), axis=1) if n_plain else np.empty((0, N))
    t1 = -1.0 + 2.0 * (np.arange(n_max) + rng.random(n_max)) / n_max  # (n_max,)
    log_rel = math.log(gap_min) * (1.0 - (np.arange(n_gap) + rng.random((n_max, n_gap))) / n_gap)
    t1 = np.repeat(t1, n_gap)
    t2 = np.maximum(t1 - (1.0 + t1) * np.exp(log_rel.ravel()), -1.0)
    strat = np.concatenate([t1[:, None], t2[:, None], _below(t2, N - 2, d, rng)], axis=1)
    t = np.concatenate([plain, strat], axis=0)
    p = _pair_density(t[:, 0], t[:, 1], N, d)
    q = _stratified_density(t[:, 0], t[:, 1], gap_min)
    raw = p / (n_plain * p + n_strat * q)
    return np.clip(t, -1.0, 1.0), raw / raw.sum(), float(raw.sum())


def attention_weights(xi1: float, xi2: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Query attention ``(q_context (n, N), q_query (n,))`` on the family, via a stable log-sum-exp.

    ``q_j = exp(xi1 t_j) / (sum_l exp(xi1 t_l) + exp(xi1 - xi2))``; ``q_query`` is the query's weight on
    itself, ``exp(xi1 - xi2) / (same denominator)``.
    """
    _check_finite("xi1", xi1)
    _check_finite("xi2", xi2)
    t = _check_inner_products(t)
    scores = xi1 * t  # (n, N)
    score_query = np.full(t.shape[0], xi1 - xi2)  # (n,)
    shift = np.maximum(scores.max(axis=1), score_query)  # (n,)
    e = np.exp(scores - shift[:, None])
    e_query = np.exp(score_query - shift)
    z = e.sum(axis=1) + e_query
    return e / z[:, None], e_query / z


# --------------------------------------------------------------------------------------------------------
# Reduced loss and gradient on a fixed sample
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Prepared:
    """A sample of ``t`` rearranged around its nearest neighbour ``i* = argmax_j t_j``."""

    delta: np.ndarray  # (n, N-1): t_j - t_{i*} for j != i*, all <= 0
    delta_min: np.ndarray  # (n,): the smallest delta (0 when N = 1)
    gap_query: np.ndarray  # (n,): 1 - t_{i*} >= 0, the query's own inner product minus t_{i*}
    weight: np.ndarray | None = None  # (n,): probability weights summing to 1 (None: the plain mean)


def _check_weights(weights: np.ndarray | None, n_prompts: int) -> np.ndarray | None:
    """Weights normalised to sum to 1, or None; raises unless they are ``n_prompts`` finite numbers >= 0."""
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_prompts,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be {n_prompts} finite numbers >= 0 with a positive sum (one per prompt of t)")
    return w / w.sum()


def _prepare(t: np.ndarray, weights: np.ndarray | None = None) -> _Prepared:
    """Sort each row of ``t`` descending and store the gaps to the row maximum (and the prompts' weights)."""
    t = _check_inner_products(t)
    weight = _check_weights(weights, t.shape[0])
    t_sorted = -np.sort(-t, axis=1)  # (n, N), descending
    t_max = t_sorted[:, 0]
    delta = np.ascontiguousarray(t_sorted[:, 1:] - t_max[:, None])  # (n, N-1)
    delta_min = delta[:, -1] if delta.shape[1] else np.zeros_like(t_max)
    return _Prepared(delta=delta, delta_min=delta_min, gap_query=1.0 - t_max, weight=weight)


def _per_prompt(
    xi1: float, xi2: float, delta: np.ndarray, delta_min: np.ndarray, gap_query: np.ndarray, with_grad: bool
) -> tuple[np.ndarray, ...]:
    """Per-prompt binary loss (and gradient in xi1, xi2) for one chunk of a prepared sample."""
    # Shift every score by its row maximum: scores relative to s_{i*} are xi1*delta_j (context),
    # 0 (i*) and xi1*gap_query - xi2 (query).
    shift = np.maximum(0.0, xi1 * gap_query - xi2)  # (n,)
    if xi1 < 0:
        shift = np.maximum(shift, xi1 * delta_min)
    e = np.exp(xi1 * delta - shift[:, None])  # (n, N-1)
    e_star = np.exp(-shift)
    e_query = np.exp(xi1 * gap_query - xi2 - shift)
    s = e.sum(axis=1)
    z = e_star + s + e_query  # >= 1: one shifted score is 0
    r = (s + e_query) / z  # 1 - q_{i*}, without cancellation
    sum_sq = np.einsum("ij,ij->i", e, e) / (z * z)  # sum_{j != i*} q_j^2
    loss = 0.5 * (r * r + sum_sq)
    if not with_grad:
        return (loss,)
    q_query = e_query / z
    gbar = sum_sq - (e_star / z) * r
    e_delta = e * delta
    sum_q_delta = e_delta.sum(axis=1) / z
    sum_sq_delta = np.einsum("ij,ij->i", e_delta, e) / (z * z)
    grad_xi1 = sum_sq_delta - gbar * (sum_q_delta + q_query * gap_query)
    grad_xi2 = q_query * gbar
    return loss, grad_xi1, grad_xi2


def _per_prompt_all(xi1: float, xi2: float, prep: _Prepared, with_grad: bool) -> list[np.ndarray]:
    """Per-prompt binary loss (and gradient) over the whole prepared sample, computed in chunks."""
    n = prep.gap_query.shape[0]
    parts: list[tuple[np.ndarray, ...]] = []
    for lo in range(0, n, _CHUNK_ROWS):
        hi = min(lo + _CHUNK_ROWS, n)
        parts.append(_per_prompt(xi1, xi2, prep.delta[lo:hi], prep.delta_min[lo:hi], prep.gap_query[lo:hi], with_grad))
    return [np.concatenate([p[i] for p in parts]) for i in range(len(parts[0]))]


def _mean(values: np.ndarray, prep: _Prepared) -> float:
    """The sample mean, or the weighted mean when the sample carries weights."""
    return float(values.mean()) if prep.weight is None else float(values @ prep.weight)


def _loss_prepared(xi1: float, xi2: float, prep: _Prepared) -> float:
    return _mean(_per_prompt_all(xi1, xi2, prep, with_grad=False)[0], prep)


def _loss_grad_prepared(xi1: float, xi2: float, prep: _Prepared) -> tuple[float, float, float]:
    loss, g1, g2 = _per_prompt_all(xi1, xi2, prep, with_grad=True)
    return _mean(loss, prep), _mean(g1, prep), _mean(g2, prep)


def reduced_loss(
    xi1: float, xi2: float, t: np.ndarray, n_classes: int | None = None, weights: np.ndarray | None = None
) -> float:
    """Sample estimate of ``L_bin(xi1, xi2)`` (or ``L_MC`` when ``n_classes`` is given) on the fixed ``t``.

    ``weights`` (one per prompt, e.g. from ``stratified_inner_products``) turn the mean into a weighted mean.
    """
    _check_finite("xi1", xi1)
    _check_finite("xi2", xi2)
    return loss_scale(n_classes) * _loss_prepared(xi1, xi2, _prepare(t, weights))


def reduced_loss_and_grad(
    xi1: float, xi2: float, t: np.ndarray, n_classes: int | None = None, weights: np.ndarray | None = None
) -> tuple[float, float, float]:
    """``(L, dL/dxi1, dL/dxi2)`` on the fixed sample ``t``: the exact gradient of the sample loss."""
    _check_finite("xi1", xi1)
    _check_finite("xi2", xi2)
    scale = loss_scale(n_classes)
    loss, g1, g2 = _loss_grad_prepared(xi1, xi2, _prepare(t, weights))
    return scale * loss, scale * g1, scale * g2


class MonteCarloEstimate(NamedTuple):
    """Sample means over prompts and their standard errors (sd / sqrt(n_prompts))."""

    loss: float
    grad_xi1: float
    grad_xi2: float
    se_loss: float
    se_grad_xi1: float
    se_grad_xi2: float


def monte_carlo_estimate(
    xi1: float, xi2: float, t: np.ndarray, n_classes: int | None = None, weights: np.ndarray | None = None
) -> MonteCarloEstimate:
    """Loss and gradient on ``t`` with their Monte-Carlo standard errors, to show the sampling error is small.

    The labels are integrated exactly, so the only randomness is the draw of ``t``; the standard error is
    the per-prompt standard deviation over ``sqrt(n_prompts)``. With ``weights`` (normalised to ``w``) it is
    ``sqrt(sum_i w_i^2 (v_i - mean)^2)``, which ignores the variance reduction of stratification (an upper
    bound for the stratified sampler).
    """
    _check_finite("xi1", xi1)
    _check_finite("xi2", xi2)
    scale = loss_scale(n_classes)
    prep = _prepare(t, weights)
    values = _per_prompt_all(xi1, xi2, prep, with_grad=True)
    n = values[0].shape[0]
    means = [_mean(v, prep) for v in values]
    if n < 2:
        ses = [math.nan] * len(values)
    elif prep.weight is None:
        ses = [float(v.std(ddof=1)) / math.sqrt(n) for v in values]
    else:
        ses = [math.sqrt(float((prep.weight**2) @ (v - m) ** 2)) for v, m in zip(values, means)]
    return MonteCarloEstimate(*(scale * m for m in means), *(scale * s for s in ses))


def loss_landscape(
    xi1_grid: np.ndarray,
    xi2_grid: np.ndarray,
    t: np.ndarray,
    n_classes: int | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Reduced loss on the grid, shape ``(len(xi1_grid), len(xi2_grid))`` (``'ij'`` indexing), one sample ``t``."""
    xi1_grid = np.asarray(xi1_grid, dtype=np.float64).ravel()
    xi2_grid = np.asarray(xi2_grid, dtype=np.float64).ravel()
    for name, grid in (("xi1_grid", xi1_grid), ("xi2_grid", xi2_grid)):
        if grid.size == 0 or not np.all(np.isfinite(grid)):
            raise ValueError(f"{name} must be a non-empty array of finite numbers")
    prep = _prepare(t, weights)
    scale = loss_scale(n_classes)
    out = np.empty((xi1_grid.size, xi2_grid.size))
    for i, xi1 in enumerate(xi1_grid):
        for k, xi2 in enumerate(xi2_grid):
            out[i, k] = scale * _loss_prepared(float(xi1), float(xi2), prep)
    return out


# --------------------------------------------------------------------------------------------------------
# Gradient descent and gradient flow
# --------------------------------------------------------------------------------------------------------


def gd_update(xi1: float, xi2: float, grad_xi1: float, grad_xi2: float, eta: float, d: int) -> tuple[float, float]:
    """One full-matrix GD step projected on the family (docs/method.md §4): the ``xi1`` step is divided by ``d``.

    ``dL/dW11`` is ``(1/d) dL/dxi1`` times the identity (rotation invariance), and ``xi1`` is the common
    diagonal of ``W11``, hence ``xi1 <- xi1 - (eta/d) dL/dxi1``; ``xi2 = -W33`` gives ``xi2 <- xi2 - eta dL/dxi2``.
    """
    return xi1 - (eta / d) * grad_xi1, xi2 - eta * grad_xi2


def log_spaced_steps(steps: int, n_points: int = 60) -> np.ndarray:
    """Distinct integers from 0 to ``steps`` (both included), roughly log-spaced."""
    _check_positive_int("steps", steps, minimum=0)
    _check_positive_int("n_points", n_points, minimum=2)
    if steps == 0:
        return np.zeros(1, dtype=np.int64)
    inner = np.geomspace(1, steps, n_points - 1).round().astype(np.int64)
    return np.unique(np.concatenate([[0], inner, [steps]]))


class GDTrajectory(NamedTuple):
    """Gradient descent recorded after ``step`` updates (``time = eta * step``)."""

    step: np.ndarray
    time: np.ndarray
    xi1: np.ndarray
    xi2: np.ndarray
    loss: np.ndarray


def _check_record_steps(record_steps: np.ndarray | None, steps: int) -> np.ndarray:
    if record_steps is None:
        return log_spaced_steps(steps)
    rec = np.asarray(record_steps)
    if (
        rec.ndim != 1
        or rec.size == 0
        or not np.issubdtype(rec.dtype, np.integer)
        or np.any(np.diff(rec) <= 0)
        or rec[0] < 0
        or rec[-1] > steps
    ):
        raise ValueError(f"record_steps must be strictly increasing integers in [0, steps={steps}]")
    return rec.astype(np.int64)


def gradient_descent(
    xi1_0: float,
    xi2_0: float,
    eta: float,
    steps: int,
    t: np.ndarray,
    d: int,
    record_steps: np.ndarray | None = None,
    n_classes: int | None = None,
    weights: np.ndarray | None = None,
) -> GDTrajectory:
    """Exact full-matrix GD on the reduced loss of the fixed sample ``t`` (binary, or ``L_MC`` for ``n_classes``).

    ``record_steps`` (default: ``log_spaced_steps(steps)``) are update counts at which ``xi1``, ``xi2`` and the
    loss at those parameters are recorded; step 0 is the initial point.
    """
    _check_finite("xi1_0", xi1_0)
    _check_finite("xi2_0", xi2_0)
    _check_positive("eta", eta)
    _check_positive_int("steps", steps, minimum=0)
    _check_positive_int("d", d, minimum=2)
    rec = _check_record_steps(record_steps, steps)
    scale = loss_scale(n_classes)
    prep = _prepare(t, weights)
    out = np.empty((3, rec.size))
    xi1, xi2 = float(xi1_0), float(xi2_0)
    k = 0
    for step in range(int(rec[-1]) + 1):
        if step == rec[k]:
            out[:, k] = xi1, xi2, scale * _loss_prepared(xi1, xi2, prep)
            k += 1
            if k == rec.size:
                break
        _, g1, g2 = _loss_grad_prepared(xi1, xi2, prep)
        xi1, xi2 = gd_update(xi1, xi2, scale * g1, scale * g2, eta, d)
    return GDTrajectory(rec, eta * rec.astype(np.float64), out[0], out[1], out[2])


class FlowTrajectory(NamedTuple):
    """Gradient flow recorded at the flow times ``time`` (``time = eta * step`` for GD)."""

    time: np.ndarray
    xi1: np.ndarray
    xi2: np.ndarray
    loss: np.ndarray


def gradient_flow(
    xi1_0: float,
    xi2_0: float,
    time_start: float,
    time_end: float,
    t: np.ndarray,
    d: int,
    n_record: int = 50,
    n_classes: int | None = None,
    method: str = "LSODA",
    record_times: np.ndarray | None = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    weights: np.ndarray | None = None,
) -> FlowTrajectory:
    """Gradient flow ``d xi1/dt = -(1/d) dL/dxi1``, ``d xi2/dt = -dL/dxi2`` from ``time_start`` to ``time_end``.

    Since ``xi`` grows like ``log(time)``, the ODE is solved in ``tau = log(1 + time)``:
    ``d xi/d tau = (1 + time) d xi/dt``. That keeps the step count roughly constant per decade of time, so
    reaching ``time = 1e12`` costs a few hundred gradient evaluations. Records ``n_record`` log-spaced times
    in ``[time_start, time_end]`` (``time_start`` may be 0), or exactly ``record_times`` when given.
    """
    _check_finite("xi1_0", xi1_0)
    _check_finite("xi2_0", xi2_0)
    if not (math.isfinite(time_start) and time_start >= 0):
        raise ValueError(f"time_start must be a finite number >= 0, got {time_start!r}")
    if not (math.isfinite(time_end) and time_end > time_start):
        raise ValueError(f"time_end must be finite and > time_start={time_start}, got {time_end!r}")
    _check_positive_int("d", d, minimum=2)
    _check_positive_int("n_record", n_record, minimum=2)
    if method not in ("LSODA", "Radau", "BDF", "RK45", "DOP853"):
        raise ValueError(f"method must be one of 'LSODA', 'Radau', 'BDF', 'RK45', 'DOP853', got {method!r}")
    _check_positive("rtol", rtol)
    _check_positive("atol", atol)
    scale = loss_scale(n_classes)
    prep = _prepare(t, weights)

    def rhs(tau: float, y: np.ndarray) -> np.ndarray:
        _, g1, g2 = _loss_grad_prepared(float(y[0]), float(y[1]), prep)
        return -math.exp(tau) * scale * np.array([g1 / d, g2])  # exp(tau) = 1 + time

    if record_times is None:
        record_times = _log_spaced_times(time_start, time_end, n_record)
    record_times = _check_record_times(record_times, time_start, time_end)
    tau_span = (math.log1p(time_start), math.log1p(time_end))
    tau_record = np.clip(np.log1p(record_times), *tau_span)  # clip: log1p(expm1(x)) may miss x by an ulp
    sol = solve_ivp(rhs, tau_span, [xi1_0, xi2_0], method=method, t_eval=tau_record, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"gradient_flow: solve_ivp ({method}) failed: {sol.message}")
    loss = np.array([scale * _loss_prepared(float(a), float(b), prep) for a, b in sol.y.T])
    return FlowTrajectory(record_times, sol.y[0], sol.y[1], loss)


def _check_record_times(record_times: np.ndarray, time_start: float, time_end: float) -> np.ndarray:
    rec = np.asarray(record_times, dtype=np.float64)
    if rec.ndim != 1 or rec.size == 0 or np.any(np.diff(rec) <= 0) or rec[0] < time_start or rec[-1] > time_end:
        raise ValueError(
            f"record_times must be strictly increasing times in [time_start={time_start}, time_end={time_end}]"
        )
    return rec


def _log_spaced_times(time_start: float, time_end: float, n_record: int) -> np.ndarray:
    """``n_record`` increasing times from ``time_start`` to ``time_end``, log-spaced (in ``1 + time``)."""
    times = np.expm1(np.linspace(math.log1p(time_start), math.log1p(time_end), n_record))
    times[0], times[-1] = time_start, time_end  # exact endpoints despite rounding in expm1(log1p(.))
    return times


# --------------------------------------------------------------------------------------------------------
# Thresholds on sigma (docs/method.md §7)
# --------------------------------------------------------------------------------------------------------


def sigma_threshold_theorem1(N: int, d: int) -> float:
    """Theorem 1's explicit part of the bound: ``2 max(log(N d), -log(1 - (N sqrt(d))^(-1/d)))``.

    The theorem's third term has an unknown constant and is omitted.
    """
    _check_positive_int("N", N)
    _check_positive_int("d", d, minimum=2)
    return 2.0 * max(math.log(N * d), -math.log(1.0 - (N * math.sqrt(d)) ** (-1.0 / d)))


def lemma12_a(N: int, d: int) -> float:
    """``a_{N,d} = (2 N sqrt(d))^(-2/(d-3))`` (needs ``d >= 4``)."""
    _check_positive_int("N", N)
    _check_positive_int("d", d, minimum=4)
    return (2.0 * N * math.sqrt(d)) ** (-2.0 / (d - 3))


def sigma_threshold_lemma12(N: int, d: int) -> float:
    """Lemma 12's bound ``3 log(2 N^4 d / a_{N,d})`` (needs ``d >= 4``)."""
    return 3.0 * math.log(2.0 * N**4 * d / lemma12_a(N, d))
