"""The population reduced loss and its gradient by a quadrature that follows the dynamics (docs/method.md §7.3,
"The population quadrature"); each prompt's value is ``loss._per_prompt``'s, by its compiled port."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from onenn.maths.nodes import PANEL
from onenn.maths.stream import numpy_generator
from onenn.theory.reduced.dynamics import Trajectory, flow_of
from onenn.theory.reduced.loss import Prepared, _per_prompt_all, _shift
from onenn.theory.reduced.sampling import (
    check_finite,
    check_integer,
    inner_product_cdf,
    inner_product_density,
    log_pair_density,
)

if TYPE_CHECKING:
    from onenn.base.progress import FlowProgressCallback

#: Gauss-Legendre nodes in the law of the third-nearest inner product given the second (``third_nodes``)
THIRD_NODES = 8
#: points of the table that inverts ``F`` by linear interpolation (error ~ spacing^2 |f'/f|, 1e-10 in the bulk)
_TABLE_POINTS = (1 << 18) + 1
#: the drawn points' inverse of F (``compiled.drawn_gaps``) uses a table on a uniform grid of F's values for
#: ``|t| <= INVERSE_BULK`` (within 4e-9 of ``np.interp`` there), ``compiled.interp`` in the steeper tails
INVERSE_BULK = 0.8
#: the t1 integral's two bulk pieces meet at this quantile of the law of ``t_(1)`` (or at the boundary's, if higher)
_BULK_QUANTILE = 0.05
#: the instance of the audit's stream (onenn.maths.stream) that gives the uniforms of the other N - 3 inner products
REST_STREAM = 3
#: the instance that gives the seed swap's uniforms (the same quadrature with other draws: its noise)
SWAP_STREAM = 4


def _panels(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre on [0, 1]: ``nodes / PANEL`` equal panels of ``PANEL`` nodes each."""
    x, w = np.polynomial.legendre.leggauss(PANEL)
    panels = nodes // PANEL
    lo = np.arange(panels)[:, None] / panels
    return (lo + (x[None, :] + 1.0) / (2.0 * panels)).ravel(), np.tile(w / (2.0 * panels), panels)


@dataclass(frozen=True)
class Quadrature:
    """The fixed parts of the population quadrature: reference nodes, weights, uniforms, the inverse table."""

    N: int
    d: int
    u: np.ndarray  # (n1,) reference nodes of t1 in [0, 1]
    u_weight: np.ndarray  # (n1,)
    v: np.ndarray  # (ng,) reference nodes of the gap in [0, 1]
    v_weight: np.ndarray  # (ng,)
    y: np.ndarray  # (n3,) Gauss-Legendre nodes in [0, 1] of the third-nearest's law given t2
    y_weight: np.ndarray  # (n3,)
    uniforms: np.ndarray  # (N-3, n1*ng*n3): the fixed uniforms of the other N - 3 inner products
    table_t: np.ndarray  # (T,) grid of t
    table_cdf: np.ndarray  # (T,) F on it
    table_density: np.ndarray  # (T,) f on it (the control variates' conditional means)
    bulk_start: float  # the _BULK_QUANTILE quantile of t_(1)
    table_guide: np.ndarray  # (GUIDE_CELLS + 1,) int32: where each cell of F's values starts in the table
    inverse_table: np.ndarray  # (T,) F^{-1} on the uniform grid of [0, 1] (the drawn points' fast inverse)
    inverse_range: tuple[float, float]  # where that table is used: F(-INVERSE_BULK), F(INVERSE_BULK)


def quadrature(
    N: int, d: int, t1_nodes: int, gap_nodes: int, seed: int, stream: int = REST_STREAM, third_nodes: int = THIRD_NODES
) -> Quadrature:
    """The quadrature at ``t1_nodes x gap_nodes x third_nodes`` nodes, uniforms from instance ``stream`` of ``seed``."""
    check_integer("N", N, minimum=3)
    check_integer("d", d, minimum=3)
    for name, value, unit in (("t1_nodes", t1_nodes, 4 * PANEL), ("gap_nodes", gap_nodes, PANEL)):
        check_integer(name, value, minimum=unit)
        if value % unit:
            raise ValueError(f"{name} must be a multiple of {unit}, got {value}")
    check_integer("third_nodes", third_nodes, minimum=1)
    check_integer("seed", seed, minimum=0)
    if stream not in (REST_STREAM, SWAP_STREAM):
        raise ValueError(
            f"stream must be {REST_STREAM} (the uniforms) or {SWAP_STREAM} (the seed swap's), got {stream!r}"
        )
    u, u_weight = _panels(t1_nodes)
    v, v_weight = _panels(gap_nodes)
    # y = s^2, s by Gauss-Legendre on [0, 1]: y^(1/(N-2)), steep at y = 0, becomes s^(2/(N-2)) with the Jacobian 2s
    s, s_weight = np.polynomial.legendre.leggauss(third_nodes)
    s, s_weight = (s + 1.0) / 2.0, s_weight / 2.0
    y, y_weight = s * s, 2.0 * s * s_weight
    uniforms = numpy_generator(seed, "audit", stream).random((N - 3, t1_nodes * gap_nodes * third_nodes))
    table_t = np.linspace(-1.0, 1.0, _TABLE_POINTS)
    table_cdf = inner_product_cdf(table_t, d)
    bulk_start = float(np.interp(_BULK_QUANTILE ** (1.0 / N), table_cdf, table_t))
    from onenn.theory.reduced.compiled import interp_guide  # numba: imported where it is used

    guide = interp_guide(table_cdf)
    density = inner_product_density(table_t, d)
    inverse = np.interp(np.linspace(0.0, 1.0, _TABLE_POINTS), table_cdf, table_t)
    inverse_range = (float(inner_product_cdf(-INVERSE_BULK, d)), float(inner_product_cdf(INVERSE_BULK, d)))
    return Quadrature(
        N, d, u, u_weight, v, v_weight, y, y_weight, uniforms, table_t, table_cdf, density, bulk_start, guide,
        inverse, inverse_range,
    )  # fmt: skip


def boundary(xi1: float, xi2: float) -> float:
    """``r = 1 - xi2/xi1``: prompts with ``t_(1) < r`` attend to the query itself (``-inf`` when ``xi1 <= 0``)."""
    return 1.0 - xi2 / xi1 if xi1 > 0 else -math.inf


def stuck_mass(xi1: float, xi2: float, N: int, d: int) -> float:
    """``P(t_(1) < r) = F(r)^N``: the mass of prompts beyond the boundary (exact)."""
    r = boundary(xi1, xi2)
    return 0.0 if r <= -1.0 else float(inner_product_cdf(min(r, 1.0), d)) ** N


class Nodes(NamedTuple):
    """The quadrature's prompts at one point as ``loss.prepare`` arranges them (rows: the second nearest, the
    third, the ``N - 3`` drawn), their mass, and each prompt's ``t_(1)``, ``t_(3)`` and ``F(t_(3))``."""

    prepared: Prepared
    mass: float
    t1: np.ndarray
    third: np.ndarray
    cdf_third: np.ndarray


#: the boundary's piece of the t1 integral reaches ``BOUNDARY_WIDTHS`` widths ``1/xi1`` above ``r`` (at most
#: ``_BOUNDARY_SPAN``): beyond it the query's weight relative to the nearest point is below ``exp(-40)``
BOUNDARY_WIDTHS = 40.0
_BOUNDARY_SPAN = 0.25


def _piece(q: Quadrature, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference nodes and weights on [0, 1] of piece ``k`` of the t1 integral: pieces of 1/4, 1/4, 1/2 of them."""
    n = q.u.size // 4
    lo, hi = ((0, n), (n, 2 * n), (2 * n, 4 * n))[k]
    scale = q.u.size / (hi - lo)
    return (q.u[lo:hi] - lo / q.u.size) * scale, q.u_weight[lo:hi] * scale


def _boundary_piece(q: Quadrature, c: float, w: float, top: float) -> tuple[np.ndarray, np.ndarray]:
    """``t1`` on ``[-1, top]``: ``c + w sinh(.)`` around the boundary ``c``; nodes and log weights (in ``dt1``)."""
    u, u_weight = _piece(q, 0)
    a, b = math.asinh((-1.0 - c) / w), math.asinh((top - c) / w)
    arg = a + (b - a) * u
    return np.clip(c + w * np.sinh(arg), -1.0, top), np.log(u_weight * w * (b - a) * np.cosh(arg))


#: the log-cdf piece reaches down to where ``F(t1)^N`` is ``exp(-LOG_CDF_SPAN)`` of its value at its top: below a far
#: boundary (small ``xi1``) ``F^N = e^{N z}`` would change beyond what Gauss-Legendre panels integrate
LOG_CDF_SPAN = 40.0


def _cdf_piece(q: Quadrature, k: int, bottom: float, top: float) -> tuple[np.ndarray, np.ndarray]:
    """Piece ``k`` of the t1 integral, ``t1`` on ``[bottom, top]`` by ``F^{-1}``: of ``exp(z)``, ``z`` uniform from at
    most ``LOG_CDF_SPAN / N`` below (1), or of ``y^(1/N)``, ``y`` uniform (2: nodes follow the law of ``t_(1)``)."""
    u, u_weight = _piece(q, k)
    if k == 1:
        z_hi = math.log(max(float(inner_product_cdf(top, q.d)), 1e-300))
        z_lo = max(math.log(max(float(inner_product_cdf(bottom, q.d)), 1e-300)), z_hi - LOG_CDF_SPAN / q.N)
        y, width = np.exp(z_lo + (z_hi - z_lo) * u), z_hi - z_lo
    else:
        y_lo = float(inner_product_cdf(bottom, q.d)) ** q.N
        y, width = (y_lo + (1.0 - y_lo) * u) ** (1.0 / q.N), 1.0 - y_lo
    t1 = np.clip(np.interp(y, q.table_cdf, q.table_t), bottom, top)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_w, log_cdf = np.log(u_weight * width), np.log(inner_product_cdf(t1, q.d))
        log_w = log_w + log_cdf if k == 1 else log_w - math.log(q.N) - (q.N - 1) * log_cdf
        return t1, log_w - np.log(inner_product_density(t1, q.d))


def nodes(xi1: float, xi2: float, q: Quadrature) -> Nodes:
    """Place the nodes for ``(xi1, xi2)``."""
    from onenn.theory.reduced.compiled import drawn_gaps, interp  # numba: imported where it is used

    w = 1.0 / max(xi1, 1.0)
    c = min(max(boundary(xi1, xi2), -1.0), 1.0)  # the t1 nodes: the boundary's piece, then the bulk's two
    split = min(c + min(BOUNDARY_WIDTHS * w, _BOUNDARY_SPAN), 1.0)
    bulk = max(split, q.bulk_start)
    pieces = [_boundary_piece(q, c, w, split), _cdf_piece(q, 1, split, bulk), _cdf_piece(q, 2, bulk, 1.0)]
    t1, log_t1_weight = np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces])  # (n1,)
    beta = np.arcsinh((1.0 + t1) / w)  # (n1,)
    gap = w * np.sinh(beta[:, None] * q.v[None, :])  # (n1, ng)
    gap_weight = q.v_weight[None, :] * w * beta[:, None] * np.cosh(beta[:, None] * q.v[None, :])
    t1_all = np.repeat(t1, q.v.size)
    t2 = np.maximum(t1_all - gap.ravel(), -1.0)
    cdf_t2 = inner_product_cdf(t2, q.d)
    with np.errstate(invalid="ignore"):
        log_weight = log_pair_density(t1_all, t2, q.N, q.d) + np.repeat(log_t1_weight, q.v.size)
        weight = np.nan_to_num(np.exp(log_weight) * gap_weight.ravel(), nan=0.0, posinf=0.0)
    # the largest of the other N - 2, given t2: F(t3) = F(t2) y^(1/(N-2)) with y uniform on (0, 1)
    n3 = q.y.size
    cdf_t3 = np.repeat(cdf_t2, n3) * np.tile(q.y ** (1.0 / (q.N - 2)), t2.size)
    t1_all, t2 = np.repeat(t1_all, n3), np.repeat(t2, n3)
    t3 = np.empty(cdf_t3.size)
    interp(cdf_t3, q.table_cdf, q.table_t, q.table_guide, t3)  # np.interp's numbers, by a guided lookup
    t3 = np.minimum(t3, t2)
    weight = np.repeat(weight, n3) * np.tile(q.y_weight, weight.size)
    gaps = np.empty((q.N - 1, t2.size))  # rows: the second nearest, the third, the N - 3 drawn (within t3)
    gaps[0], gaps[1] = t2 - t1_all, t3 - t1_all
    gaps_min = np.minimum(gaps[0], gaps[1])
    table = (q.inverse_table, *q.inverse_range, q.table_cdf, q.table_t, q.table_guide)
    drawn_gaps(q.uniforms, cdf_t3, t3, t1_all, *table, gaps, gaps_min)
    mass = float(weight.sum())
    return Nodes(Prepared(gaps, gaps_min, 1.0 - t1_all, weight / mass), mass, t1_all, t3, cdf_t3)


class PopulationValue(NamedTuple):
    """The population loss and gradient at one point, with the quadrature's mass (1 up to its error)."""

    loss: float
    grad_xi1: float
    grad_xi2: float
    mass: float


def population_loss_grad(xi1: float, xi2: float, q: Quadrature) -> PopulationValue:
    """``(L_bin, dL/dxi1, dL/dxi2, mass)`` by ``q``: its prompts' weighted mean, each less its control variates."""
    check_finite("xi1", xi1)
    check_finite("xi2", xi2)
    at = nodes(xi1, xi2, q)
    values = zip(_per_prompt_all(xi1, xi2, at.prepared, with_grad=True), control_variates(xi1, xi2, at, q), strict=True)
    return PopulationValue(*(float((v - c) @ at.prepared.weight) for v, c in values), at.mass)


#: below this ``xi1`` the conditional means would overflow (``e^{2 |xi1| (t3 - t)}`` up to ``e^{4 |xi1|}``): no
#: control variates (the flows have ``xi1 >= 0``)
CONTROL_XI1_MIN = -100.0


def conditional_moments(xi1: float, at: Nodes, q: Quadrature, shift: np.ndarray) -> np.ndarray:
    """``(4, n)``: ``drawn_sums``' means given ``t_(1)``, ``t_(3)`` (method.md §7.3), by ``compiled.exp_moments``."""
    from onenn.theory.reduced.compiled import exp_moments

    h = float(q.table_t[1] - q.table_t[0])
    index = np.clip(np.floor((at.third - q.table_t[0]) / h).astype(np.int64), 0, q.table_t.size - 2)
    frac = (at.third - q.table_t[index]) / h
    lead = at.third - at.t1  # <= 0

    def at_third(a: float) -> tuple[np.ndarray, np.ndarray]:
        H, J = np.empty(q.table_t.size), np.empty(q.table_t.size)
        exp_moments(a, h, q.table_density, H, J)
        return H[index] + frac * (H[index + 1] - H[index]), J[index] + frac * (J[index + 1] - J[index])

    mass = at_third(0.0)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(mass > 0, (q.N - 3) / mass, 0.0)
    out = []
    for a in (1, 2):
        h_at, j_at = at_third(a * xi1)
        factor = scale * np.exp(a * (xi1 * lead - shift))
        out.append((factor * h_at, factor * (j_at + lead * h_at)))
    (m1, m4), (m2, m3) = out
    return np.stack([m1, m2, m3, m4])


def drawn_sums(xi1: float, gaps: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``Σ e_j, Σ e_j², Σ e_j² gap_j, Σ e_j gap_j`` (4, n) over the rows of ``gaps``, ``e = exp(xi1 gaps - shift)``."""
    from onenn.theory.reduced.compiled import exp_sums  # numba: imported where it is used

    out = np.empty((4, gaps.shape[1]))
    exp_sums(np.exp(xi1 * gaps - shift), np.ascontiguousarray(gaps), out)
    return out


def slopes(
    xi1: float, xi2: float, fixed: np.ndarray, gap_query: np.ndarray, rho: np.ndarray, shift: np.ndarray
) -> tuple[tuple[np.ndarray | float, ...], ...]:
    """The derivatives in ``rho_1 ... rho_4`` of the prompt's ``(loss, dL/dxi1, dL/dxi2)`` written through the drawn
    points' sums ``rho`` (tests/unit/test_population.py's ``value_from_sums``), the other gaps ``fixed`` ``(k, n)``."""
    u, a0 = np.exp(-shift), np.exp(xi1 * gap_query - xi2 - shift)  # the query's a0; y = a0 + sum e + rho_1
    own = drawn_sums(xi1, fixed, shift)
    y = a0 + own[0] + rho[0]
    z = u + y
    s3, s4p = own[2] + rho[2], own[3] + rho[3] + a0 * gap_query
    gbar = (own[1] + rho[1] - y * u) / z**2
    dgbar = -u / z**2 - 2.0 * gbar / z  # d gbar / d rho_1; d gbar / d rho_2 = 1 / z^2
    c_loss = (-gbar / z, 0.5 / z**2, 0.0, 0.0)
    c_g1 = (-2.0 * s3 / z**3 - dgbar * s4p / z + gbar * s4p / z**2, -s4p / z**3, 1.0 / z**2, -gbar / z)
    c_g2 = (a0 * (dgbar / z - gbar / z**2), a0 / z**3, 0.0, 0.0)
    return c_loss, c_g1, c_g2


def control_variates(xi1: float, xi2: float, at: Nodes, q: Quadrature) -> tuple[np.ndarray, ...]:
    """Per prompt, for the loss and both gradient components: ``c . (R - m)``, ``R`` the drawn sums, ``m`` their
    conditional means, ``c`` the ``slopes`` at ``m``: mean 0, it removes the draw's noise to first order."""
    if xi1 < CONTROL_XI1_MIN:
        return (np.zeros(at.t1.size),) * 3
    gaps, gap_query = at.prepared.gaps, at.prepared.gap_query
    shift = _shift(xi1, xi2, gap_query, at.prepared.gaps_min)
    delta = drawn_sums(xi1, gaps[2:], shift) - (m := conditional_moments(xi1, at, q, shift))
    return tuple(
        np.nan_to_num(sum(c[k] * delta[k] for k in range(4))) for c in slopes(xi1, xi2, gaps[:2], gap_query, m, shift)
    )


def population_flow(
    xi1_0: float,
    xi2_0: float,
    time_end: float,
    q: Quadrature,
    record_times: np.ndarray,
    progress: FlowProgressCallback | None = None,
    bound: float | None = None,
) -> Trajectory:
    """The gradient flow of the population loss from time 0 (``dynamics.flow_of``), its gradient by ``q``."""
    value = partial(population_loss_grad, q=q)
    return flow_of(value, xi1_0, xi2_0, 0.0, time_end, q.d, "BDF", record_times, 1e-7, 1e-8, progress, bound)
