"""The audit's late-time law (docs/method.md §7.3, "The late-time law"): the loss's asymptote at large ``xi1`` and
the gradient flow of that asymptote, solved in log-time far beyond the population flow's reach.

At large ``xi1``, with ``r = 1 - xi2/xi1`` the boundary, the population loss is, to leading order,

    L_late(xi1, xi2) = C / xi1 + 1/2 F(r)^N,    C = (ln 2 - 1/2) N (N-1) int_{-1}^{1} f(t)^2 F(t)^(N-2) dt,

the near-ties' share (two context points within ``1/xi1`` of each other, each loss ``1/(1 + e^x)^2`` at the
scaled gap ``x = xi1 (t_(1) - t_(2))``) and the stuck mass's (prompts with ``t_(1) < r``, loss 1/2). The late
flow is the flow of ``dynamics`` (``d xi1/dt = -(1/d) dL/dxi1``, ``d xi2/dt = -dL/dxi2``) on ``L_late``::

    d xi1/dt = (C - 1/2 xi2 p(r)) / (d xi1^2),    d xi2/dt = 1/2 p(r) / xi1,    p(r) = N f(r) F(r)^(N-1),

solved in ``s = log t`` for ``(log xi1, log xi2)``, so that it runs to ``t = 10^1000`` and beyond.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.integrate import solve_ivp
from scipy.special import betainc, betaln

from onenn.theory.reduced.checks import check_integer, check_positive
from onenn.theory.reduced.sampling import inner_product_cdf, inner_product_density

#: the near-ties' integral int_0^inf dx / (1 + e^x)^2
TIE_CONSTANT = math.log(2.0) - 0.5
#: Gauss-Legendre nodes per panel, and panels on [-1, 1], of the asymptote's integral
_NODES, _PANELS = 16, 256


def tie_integral(N: int, d: int) -> float:
    """``N (N-1) int_{-1}^{1} f(t)^2 F(t)^(N-2) dt``: the density of a tie ``t_(1) = t_(2)`` (composite
    Gauss-Legendre, ``_PANELS`` panels of ``_NODES`` nodes; the integrand is smooth and 0 at both ends)."""
    check_integer("N", N, minimum=2)
    check_integer("d", d, minimum=3)
    x, w = np.polynomial.legendre.leggauss(_NODES)
    edges = np.linspace(-1.0, 1.0, _PANELS + 1)
    half = np.diff(edges)[:, None] / 2.0
    t = (edges[:-1, None] + half * (x[None, :] + 1.0)).ravel()
    weight = (half * w[None, :]).ravel()
    f = inner_product_density(t, d)
    return float(N * (N - 1) * np.sum(weight * f * f * inner_product_cdf(t, d) ** (N - 2)))


def asymptote(N: int, d: int) -> float:
    """``C``: the limit of ``loss * xi1`` as ``xi1 -> inf`` with the stuck mass negligible (docs/method.md §7.3)."""
    return TIE_CONSTANT * tie_integral(N, d)


def stuck_loss(xi1: float, xi2: float, N: int, d: int) -> float:
    """``1/2 F(r)^N``: the stuck mass's share of the loss (0 when ``r <= -1``)."""
    r = 1.0 - xi2 / xi1
    return 0.0 if r <= -1.0 else 0.5 * float(inner_product_cdf(min(r, 1.0), d)) ** N


def late_loss(xi1: float, xi2: float, N: int, d: int, C: float | None = None) -> float:
    """``L_late = C/xi1 + 1/2 F(r)^N`` (``C`` from ``asymptote`` unless given)."""
    return (asymptote(N, d) if C is None else C) / xi1 + stuck_loss(xi1, xi2, N, d)


def _log_p(v: float, N: int, d: int) -> float:
    """``log p(r) = log(N f(r) F(r)^(N-1))`` at ``r = e^v - 1``, the log density of ``t_(1)`` at the boundary
    (``-inf`` for ``r >= 1``); in ``v = log(1 + r)`` it stays exact as ``r -> -1``."""
    r = math.expm1(v)
    if r >= 1.0:
        return -math.inf
    half = (d - 1) / 2.0
    log_f = (half - 1.0) * (v + math.log1p(-r)) - (2 * half - 1) * math.log(2.0) - float(betaln(half, half))
    cdf = float(betainc(half, half, 0.5 * math.exp(v)))  # F(r), from 1 + r = e^v without rounding
    if cdf <= 0.0:  # underflow, far below any path (a solver's trial step)
        return -math.inf
    log_cdf = math.log(cdf)
    return math.log(N) + log_f + (N - 1) * log_cdf


def _exp(x: float) -> float:
    """``exp(x)``, capped at ``exp(700)``: a solver's trial step far off the path must not overflow."""
    return math.exp(min(x, 700.0))


class LateTrajectory(NamedTuple):
    """The late flow at the recorded times: logs of time and ``xi``, the ratio, the boundary, ``L_late * xi1``."""

    log10_time: np.ndarray  # times up to 10^1000 and beyond overflow a float: their logs
    log10_xi1: np.ndarray
    log10_xi2: np.ndarray
    xi_ratio: np.ndarray
    boundary: np.ndarray
    one_plus_boundary: np.ndarray  # 1 + r, exact where r rounds to -1
    loss_xi1: np.ndarray  # L_late * xi1 = C + 1/2 F(r)^N xi1


def late_rhs(s: float, y: np.ndarray, C: float, N: int, d: int) -> np.ndarray:
    """The late flow in ``s = log t`` for ``y = (z, v)``, ``z = s - 3 log xi1`` and ``v = log(1 + r)``, both
    ``O(1)`` on the path; with ``P = xi1 p(r)`` (``O(1)`` too) and ``e^z = t / xi1^3``::

        d log xi1/ds = e^z (C - (1 - r) P/2) / d,            dz/ds = 1 - 3 d log xi1/ds,
        dr/ds = e^z ((1 - r) C/d - P/2 (1 + (1 - r)^2/d)),    dv/ds = dr/ds / (1 + r)."""
    z, v = float(y[0]), float(y[1])
    r = math.expm1(v)
    log_p = _log_p(v, N, d)
    P = _exp((s - z) / 3.0 + log_p) if log_p > -math.inf else 0.0
    growth = _exp(z) * (C - 0.5 * (1.0 - r) * P) / d
    dr = _exp(z) * ((1.0 - r) * C / d - 0.5 * P * (1.0 + (1.0 - r) ** 2 / d))
    return np.array([1.0 - 3.0 * growth, dr * _exp(-v)])


def late_flow(
    xi1_0: float,
    xi2_0: float,
    time_0: float,
    log10_times: np.ndarray,
    N: int,
    d: int,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> LateTrajectory:
    """The gradient flow of ``L_late`` from ``(xi1_0, xi2_0)`` at ``time_0``, recorded at the times
    ``10**log10_times`` (increasing, from ``log10(time_0)`` on), solved by LSODA in ``s = log t`` (``late_rhs``).
    The boundary relaxes on a scale of ``s`` far shorter than the growth of ``xi1``: the system is stiff."""
    check_integer("N", N, minimum=2)
    check_integer("d", d, minimum=3)
    check_positive("time_0", time_0)
    check_positive("xi1_0", xi1_0)
    check_positive("xi2_0", xi2_0)
    if not xi2_0 < 2.0 * xi1_0:
        raise ValueError(f"the late flow starts inside the boundary's range r > -1 (xi2 < 2 xi1), got {xi1_0}, {xi2_0}")
    C = asymptote(N, d)
    ln10 = math.log(10.0)
    s_rec = np.asarray(log10_times, dtype=np.float64) * ln10
    s0 = math.log(time_0)
    if s_rec.ndim != 1 or s_rec.size == 0 or np.any(np.diff(s_rec) <= 0) or s_rec[0] < s0 - 1e-9:
        raise ValueError("log10_times must be increasing, from log10(time_0) on")
    s_rec[0] = max(s_rec[0], s0)
    y0 = [s0 - 3.0 * math.log(xi1_0), math.log(2.0 - xi2_0 / xi1_0)]
    sol = solve_ivp(late_rhs, (s0, float(s_rec[-1])), y0, "LSODA", s_rec, rtol=rtol, atol=atol, args=(C, N, d))
    if not sol.success:
        raise RuntimeError(f"late_flow: solve_ivp (LSODA) failed: {sol.message}")
    log_xi1 = (sol.t - sol.y[0]) / 3.0
    r = np.expm1(sol.y[1])
    log_xi2 = log_xi1 + np.log1p(-r)
    half = (d - 1) / 2.0
    with np.errstate(divide="ignore"):
        log_cdf = np.log(betainc(half, half, 0.5 * np.exp(sol.y[1])))
    loss_xi1 = C + 0.5 * np.exp(N * log_cdf + log_xi1)
    return LateTrajectory(
        sol.t / ln10, log_xi1 / ln10, log_xi2 / ln10, np.exp(log_xi1 - log_xi2), r, np.exp(sol.y[1]), loss_xi1
    )
