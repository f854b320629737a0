"""The audit's late-time law (docs/method.md §7.3): the loss's asymptote ``L_late = C / xi1 + 1/2 F(r)^N`` at large
``xi1`` and its gradient flow, solved in ``s = log t`` (to ``t = 10^1000`` and beyond), held to the population flow."""

import math

import numpy as np
import pandas as pd
from scipy.integrate import solve_ivp
from scipy.special import betainc, betaln

from onenn.theory.reduced.sampling import check_finite, check_integer, inner_product_cdf, inner_product_density

#: the near-ties' integral int_0^inf dx / (1 + e^x)^2
TIE_CONSTANT = math.log(2.0) - 0.5
#: Gauss-Legendre nodes per panel, and panels on [-1, 1], of the asymptote's integral
_NODES, _PANELS = 16, 256


def asymptote(N: int, d: int) -> float:
    """``C``: the limit of ``loss * xi1`` as ``xi1 -> inf`` with the stuck mass negligible (docs/method.md §7.3); the
    tie density ``N (N-1) int f^2 F^(N-2) dt`` by composite Gauss-Legendre (the integrand is 0 at both ends)."""
    check_integer("N", N, minimum=2)
    check_integer("d", d, minimum=3)
    x, w = np.polynomial.legendre.leggauss(_NODES)
    edges = np.linspace(-1.0, 1.0, _PANELS + 1)
    half = np.diff(edges)[:, None] / 2.0
    t = (edges[:-1, None] + half * (x[None, :] + 1.0)).ravel()
    weight = (half * w[None, :]).ravel()
    f = inner_product_density(t, d)
    return TIE_CONSTANT * float(N * (N - 1) * np.sum(weight * f * f * inner_product_cdf(t, d) ** (N - 2)))


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
    return math.log(N) + log_f + (N - 1) * math.log(cdf)


def boundary_layer_share(xi1: float, xi2: float, N: int, d: int) -> float:
    """What the late flow leaves out, relative: the boundary layer ``-p(r)/(2 xi1)`` of the loss (docs/audit.md)
    lowers xi2's rate ``p(r)/(2 xi1)`` by the share ``(log p)'(r)/xi1 = (f'/f + (N-1) f/F)(r)/xi1``."""
    r = 1.0 - xi2 / xi1
    log_f_slope = -(d - 3) * r / (1.0 - r * r)
    return float(log_f_slope + (N - 1) * inner_product_density(r, d) / inner_product_cdf(r, d)) / xi1


def _exp(x: float) -> float:
    """``exp(x)``, capped at ``exp(700)``: a solver's trial step far off the path must not overflow."""
    return math.exp(min(x, 700.0))


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
) -> pd.DataFrame:
    """The flow of ``L_late`` from ``(xi1_0, xi2_0)`` at ``time_0``, at the times ``10**log10_times``: one row per
    time with ``log10_time, log10_xi1, log10_xi2, xi_ratio, boundary, one_plus_boundary, loss_xi1`` (stiff: LSODA)."""
    for name, value in (("time_0", time_0), ("xi1_0", xi1_0), ("xi2_0", xi2_0)):
        check_finite(name, value, positive=True)
    if not xi2_0 < 2.0 * xi1_0:
        raise ValueError(f"the late flow starts inside the boundary's range r > -1 (xi2 < 2 xi1), got {xi1_0}, {xi2_0}")
    C = asymptote(N, d)  # it checks N and d
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
    columns = {"log10_time": sol.t / ln10, "log10_xi1": log_xi1 / ln10, "log10_xi2": log_xi2 / ln10}
    columns |= {"xi_ratio": np.exp(log_xi1 - log_xi2), "boundary": r, "one_plus_boundary": np.exp(sol.y[1])}
    return pd.DataFrame(columns | {"loss_xi1": loss_xi1})


#: the comparison starts from the population flow's point at this time and runs to its end
COMPARE_FROM = 1e12
#: the late flow alone, from the population flow's end: the times (log10) it is recorded at
FAR_DECADES = (20.0, 30.0, 40.0, 60.0, 100.0, 200.0, 300.0, 1000.0, 3000.0)


def comparison(main: pd.DataFrame, N: int, d: int) -> pd.DataFrame:
    """The late flow from the population flow's point at ``COMPARE_FROM``, at its recorded times from there on:
    ``xi1``, ``xi1/xi2`` and ``loss * xi1`` of both, their relative differences, and the boundary layer's share."""
    part = main[main["time"] >= COMPARE_FROM].sort_values("time")
    start = part.iloc[0]
    late = late_flow(float(start["xi1"]), float(start["xi2"]), float(start["time"]), np.log10(part["time"]), N, d)
    columns = {"time": part["time"], "xi1": part["xi1"], "xi1_late": 10.0 ** late["log10_xi1"].to_numpy()}
    columns |= {"xi_ratio": part["xi1"] / part["xi2"], "xi_ratio_late": late["xi_ratio"]}
    columns |= {"loss_xi1": part["reduced_loss"] * part["xi1"], "loss_xi1_late": late["loss_xi1"]}
    out = pd.DataFrame({k: np.asarray(v) for k, v in columns.items()})
    for q in ("xi1", "xi_ratio", "loss_xi1"):
        out[f"{q}_change"] = np.abs(out[f"{q}_late"] / out[q] - 1.0)
    out["layer_share"] = [boundary_layer_share(x1, x2, N, d) for x1, x2 in zip(part["xi1"], part["xi2"], strict=True)]
    return out


def far(main: pd.DataFrame, N: int, d: int) -> pd.DataFrame:
    """The late flow from the population flow's end to ``10**FAR_DECADES[-1]``, with ``xi1/xi2 - 1/2`` and
    ``law = xi1^3 (d + (1 - r)^2) / (3 C t)``, which the late-time law puts at 1."""
    end = main.sort_values("time").iloc[-1]
    decades = [math.log10(float(end["time"]))] + [x for x in FAR_DECADES if x > math.log10(float(end["time"]))]
    late = late_flow(float(end["xi1"]), float(end["xi2"]), float(end["time"]), np.array(decades), N, d)
    C = asymptote(N, d)
    law = 3.0 * late["log10_xi1"] - late["log10_time"] + np.log10((d + (1.0 - late["boundary"]) ** 2) / (3.0 * C))
    out = late[["log10_time", "xi_ratio"]].assign(xi_ratio_minus_half=late["xi_ratio"] - 0.5)
    return out.assign(**late[["boundary", "one_plus_boundary", "log10_xi1", "loss_xi1"]], law=10.0**law)


def late_time_law(population: pd.DataFrame, N: int, d: int) -> dict[str, tuple[float, pd.DataFrame | None, ...]]:
    """Per variant of the population rows: ``(end, comparison, far)``, Nones if it ends before ``COMPARE_FROM``."""
    out = {}
    for variant, main in population.groupby("variant", sort=True):
        end = float(main["time"].max())
        out[variant] = (end, None, None) if end < COMPARE_FROM else (end, comparison(main, N, d), far(main, N, d))
    return out
