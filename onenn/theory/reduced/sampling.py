"""Samples of the inner products ``t_j = <x_j, x_{N+1}>`` of a prompt, plain and weighted (docs/method.md §7), and
the argument checks of the reduced dynamics (every bad argument is a ``ValueError`` that names it)."""

import math

import numpy as np
from scipy.special import betainc, betaincinv, betaln


def check_integer(name: str, value: int, minimum: int = 1) -> None:
    """An integer (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def check_finite(name: str, value: float, positive: bool = False) -> None:
    """A finite number (``> 0`` with ``positive``)."""
    number = isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value)
    if not (number and (value > 0 or not positive)):
        raise ValueError(f"{name} must be a finite number{' > 0' if positive else ''}, got {value!r}")


def sample_inner_products(prompts: int, N: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``t`` (prompts, N): i.i.d. ``2 Beta((d-1)/2, (d-1)/2) - 1``, the law of the inner products (method.md §4.3)."""
    check_integer("prompts", prompts)
    check_integer("N", N)
    check_integer("d", d, minimum=2)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")  # noqa: TRY004 (tests expect ValueError for every bad argument)
    half = (d - 1) / 2.0
    return 2.0 * rng.beta(half, half, size=(prompts, N)) - 1.0


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


def log_pair_density(t1: np.ndarray, t2: np.ndarray, N: int, d: int) -> np.ndarray:
    """Log joint density of the two largest of ``N`` i.i.d. inner products: ``N (N-1) f(t1) f(t2) F(t2)^(N-2)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        pair = math.log(N * (N - 1)) + np.log(inner_product_density(t1, d)) + np.log(inner_product_density(t2, d))
        return pair + (N - 2) * np.log(inner_product_cdf(t2, d))


def audit_sample(
    n_plain: int, n_max: int, n_gap: int, N: int, d: int, rng: np.random.Generator, gap_min: float = 1e-8
) -> tuple[np.ndarray, np.ndarray, float]:
    """The weighted sample ``(t (n, N), weights (n,), mass)`` of docs/audit.md ("The weighted sample"), the log gap on
    ``[log gap_min, 0]``: balance-heuristic weights normalised to 1, ``mass`` their raw sum (unbiased for 1)."""
    for name, value in (("n_plain", n_plain), ("n_max", n_max), ("n_gap", n_gap)):
        check_integer(name, value, minimum=0)
    check_integer("N", N, minimum=2)
    check_integer("d", d, minimum=3)
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
    half = (d - 1) / 2.0  # the other N - 2: i.i.d. inner products below t2 (rounding must not pass it)
    u = rng.random((t2.size, N - 2)) * inner_product_cdf(t2, d)[:, None]
    below = np.minimum(2.0 * betaincinv(half, half, u) - 1.0, t2[:, None])
    t = np.concatenate([plain, np.concatenate([t1[:, None], t2[:, None], below], axis=1)], axis=0)
    p = np.exp(log_pair_density(t[:, 0], t[:, 1], N, d))
    gap = t[:, 0] - t[:, 1]  # the proposal's density: t_(1) and log(gap / (1 + t_(1))) uniform
    inside = (gap >= gap_min * (1.0 + t[:, 0])) & (gap > 0)
    with np.errstate(divide="ignore"):
        q = np.where(inside, 1.0 / (2.0 * -math.log(gap_min) * np.where(gap > 0, gap, 1.0)), 0.0)
    raw = p / (n_plain * p + n_strat * q)
    return np.clip(t, -1.0, 1.0), raw / raw.sum(), float(raw.sum())
