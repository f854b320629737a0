"""The explicit inequalities of the binary paper's convergence proof at a point of the reduced dynamics
(docs/method.md §7.6): Lemmas 8-11, Lemma 7's upper bound on ``xi2``'s rate, Lemma 12's condition, and the Jensen
step of Lemma 9's proof (its Eq. C.18) that the review names. numpy and scipy only.

Each bound is on the rate ``xi_dot = (1/eta)(xi^{t+1} - xi^t)`` of gradient descent on the family, the flow's
right-hand side: ``xi1_dot = -s (1/d) dL/dxi1``, ``xi2_dot = -s dL/dxi2`` (``dynamics.gd_update``), with ``L`` the
binary reduced loss of ``loss`` (``1/2`` in it) and ``s`` the reading's loss factor: 1 for that loss, 2 for the loss
without the ``1/2``. Every inequality is held as ``(left, right)`` and its direction; its margin is the slack over
``|left|``, positive where it holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq

from onenn.maths.crossing import ratio_crossing
from onenn.theory.reduced.loss import Prepared
from onenn.theory.reduced.sampling import inner_product_density
from onenn.theory.reduced.thresholds import lemma12_a

#: the loss factors of the two readings: ``L`` as the project defines it (1/2 in the square loss), and ``2 L``
LOSS_FACTORS = (1.0, 2.0)


def rate(grad_xi1: np.ndarray, grad_xi2: np.ndarray, d: int, loss_factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(xi1_dot, xi2_dot) = (-s dL/dxi1 / d, -s dL/dxi2)``: GD's rate on the family (``dynamics.gd_update``)."""
    return -loss_factor * np.asarray(grad_xi1) / d, -loss_factor * np.asarray(grad_xi2)


def per_prompt_gradient(xi1: float, xi2: float, prep: Prepared) -> tuple[np.ndarray, np.ndarray]:
    """``(dloss/dxi1, dloss/dxi2)`` per prompt of a prepared sample, with ``gbar`` summed from terms of one sign.

    ``loss._per_prompt`` forms ``gbar = sum_{j != i*} q_j^2 - q_{i*} r`` as a difference, which loses every digit
    when the query's weight ``q_0`` is below the round-off of the two terms (at ``xi1 = 0``, ``gbar = -q_{i*} q_0``
    exactly, and ``dL/dxi2 = q_0 gbar`` is ``e^{-2 sigma}``-small). With ``r = sum_{j != i*} q_j + q_0`` and
    ``q_j = q_{i*} e^{xi1 gap_j}`` it is ``-q_{i*} [sum_{j != i*} q_j (-expm1(xi1 gap_j)) + q_0]``: terms >= 0.
    The rest is ``loss._per_prompt``'s."""
    gaps, gap_query = prep.gaps, prep.gap_query  # (N-1, n), (n,)
    shift = np.maximum(0.0, xi1 * gap_query - xi2)
    if xi1 < 0:
        shift = np.maximum(shift, xi1 * prep.gaps_min)
    e = np.exp(xi1 * gaps - shift)  # (N-1, n): relative weights of the context but i*
    e_star = np.exp(-shift)
    e_query = np.exp(xi1 * gap_query - xi2 - shift)
    z = e_star + e.sum(axis=0) + e_query
    q, q_star, q_query = e / z, e_star / z, e_query / z
    gbar = -q_star * ((q * -np.expm1(xi1 * gaps)).sum(axis=0) + q_query)
    grad_xi1 = (q * q * gaps).sum(axis=0) - gbar * ((q * gaps).sum(axis=0) + q_query * gap_query)
    return grad_xi1, q_query * gbar


def mean_gradient(xi1: float, xi2: float, prep: Prepared) -> tuple[float, float]:
    """``(dL/dxi1, dL/dxi2)``: ``per_prompt_gradient`` averaged with the sample's weights."""
    g1, g2 = per_prompt_gradient(xi1, xi2, prep)
    if prep.weight is None:
        return float(g1.mean()), float(g2.mean())
    return float(g1 @ prep.weight), float(g2 @ prep.weight)


@dataclass(frozen=True)
class Inequality:
    """One inequality of the proof: ``left <= right`` (``upper``) or ``left >= right`` (not ``upper``);
    ``c_d``: its right side has the unknown constant ``C_d`` (evaluated per unit ``C_d``)."""

    name: str
    label: str
    upper: bool
    c_d: bool = False
    needs_rate: bool = True


#: the inequalities, in the proof's order
INEQUALITIES = (
    Inequality("lemma8", "Lemma 8: d ξ̇1 + 2 ξ̇2 ≥ (1 − 1/(2N)) C_d e^{−6ξ1}", upper=False, c_d=True),
    Inequality("lemma9", "Lemma 9: ξ̇1 ≤ (2N/d) e^{−4ξ1/(N+1)²} − (a/(d N³ e)) e^{2(ξ1−ξ2)}", upper=True),
    Inequality("lemma10", "Lemma 10: d ξ̇1 ≥ (1 − 1/(2N)) C_d e^{−6ξ1} − 2 e^{2ξ1−2ξ2}", upper=False, c_d=True),
    Inequality("lemma11", "Lemma 11: ξ̇2 ≥ e^{2aξ1 − 2ξ2} / ((N+1)³ e)", upper=False),
    Inequality("lemma7", "Lemma 7 (Theorem 1's upper bound): ξ̇2 ≤ e^{−ξ2/15}", upper=True),
    Inequality(
        "lemma12", "Lemma 12, from Lemma 9: (2N/d) e^{−4ξ1/(N+1)²} < (a/(d N³ e)) e^{2(ξ1−ξ2)}", True, False, False
    ),
    Inequality(
        "lemma12_replaced", "Lemma 12, first term (2N/d) e^{−ξ1/2}: 2.5ξ1 > log(2N⁴e/a) + 2ξ2", False, False, False
    ),
    Inequality("lemma12_printed", "Lemma 12, printed form: 2.5ξ1 > log(2N⁴e/a) + ξ2", False, False, False),
)
BY_NAME = {i.name: i for i in INEQUALITIES}
#: the Lemma 12 conditions: needed only where ``xi1 = (7/15) xi2`` is reached
LEMMA12 = ("lemma12", "lemma12_replaced", "lemma12_printed")


def printed_threshold(N: int, d: int) -> float:
    """``6 log(2 N^4 e / a)``: on the line ``xi1 = (7/15) xi2`` the printed form ``2.5 xi1 > log(2N^4 e/a) + xi2``
    reads ``xi2 / 6 > log(2N^4 e/a)``."""
    return 6.0 * math.log(2 * N**4 * math.e / lemma12_a(N, d))


def _exp(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.exp(x)


def sides(
    name: str,
    xi1: np.ndarray,
    xi2: np.ndarray,
    xi1_dot: np.ndarray | None,
    xi2_dot: np.ndarray | None,
    N: int,
    d: int,
    c_d: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(left, right)`` of inequality ``name`` (``INEQUALITIES``) at the points, as the issue's text types them.
    ``a = a_{N,d}`` (``thresholds.lemma12_a``). Exponentials that overflow give ``inf`` (a side of ``-inf``)."""
    xi1, xi2 = np.asarray(xi1, dtype=np.float64), np.asarray(xi2, dtype=np.float64)
    a = lemma12_a(N, d)
    first = (2 * N / d) * np.exp(-4 * xi1 / (N + 1) ** 2)
    query = (a / (d * N**3 * math.e)) * _exp(2 * (xi1 - xi2))
    growth = (1 - 1 / (2 * N)) * c_d * np.exp(-6 * xi1)
    log_term = math.log(2 * N**4 * math.e / a)
    if name == "lemma8":
        return d * xi1_dot + 2 * xi2_dot, growth
    if name == "lemma9":
        return np.asarray(xi1_dot, dtype=np.float64), first - query
    if name == "lemma10":
        return d * np.asarray(xi1_dot), growth - 2 * _exp(2 * xi1 - 2 * xi2)
    if name == "lemma11":
        return np.asarray(xi2_dot, dtype=np.float64), np.exp(2 * a * xi1 - 2 * xi2) / ((N + 1) ** 3 * math.e)
    if name == "lemma7":
        return np.asarray(xi2_dot, dtype=np.float64), np.exp(-xi2 / 15)
    if name == "lemma12":
        return first, query
    if name == "lemma12_replaced":
        return 2.5 * xi1, log_term + 2 * xi2
    if name == "lemma12_printed":
        return 2.5 * xi1, log_term + xi2
    raise ValueError(f"name must be one of {', '.join(BY_NAME)}; got {name!r}")


def margin(left: np.ndarray, right: np.ndarray, upper: bool) -> np.ndarray:
    """The slack over ``|left|``: ``(right - left)/|left|`` for ``left <= right``, ``(left - right)/|left|`` for
    ``left >= right``; positive where the inequality holds (``inf`` where ``left`` is 0 and it holds)."""
    left, right = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
    slack = right - left if upper else left - right
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return slack / np.abs(left)


def largest_c_d(name: str, xi1: np.ndarray, xi2: np.ndarray, xi1_dot: np.ndarray, xi2_dot: np.ndarray, N: int, d: int):
    """The largest ``C_d`` for which Lemma 8 or 10 holds at each point: ``(left + extra) e^{6 xi1} / (1 - 1/(2N))``,
    ``extra = 2 e^{2 xi1 - 2 xi2}`` for Lemma 10 (``-inf`` where the left side is negative and ``e^{6 xi1}``
    overflows)."""
    xi1 = np.asarray(xi1, dtype=np.float64)
    if name == "lemma8":
        slack = d * np.asarray(xi1_dot) + 2 * np.asarray(xi2_dot)
    elif name == "lemma10":
        slack = d * np.asarray(xi1_dot) + 2 * _exp(2 * xi1 - 2 * np.asarray(xi2))
    else:
        raise ValueError(f"name must be lemma8 or lemma10; got {name!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(slack == 0, 0.0, slack * _exp(6 * xi1)) / (1 - 1 / (2 * N))


def crossing(time: np.ndarray, xi1: np.ndarray, xi2: np.ndarray) -> tuple[float, float, float]:
    """``(t, xi1, xi2)`` where ``xi1/xi2`` first reaches 7/15 along a trajectory (``onenn.maths.crossing.ratio_crossing``,
    the audit table's crossing time: ``t`` in log time); ``xi1`` and ``xi2`` linear between the recorded points
    around it at the share where the ratio meets the bound; NaNs if it never does."""
    t, k, share = ratio_crossing(time, np.asarray(xi1) / np.asarray(xi2))
    if k < 0:
        return math.nan, math.nan, math.nan
    if k == 0:
        return t, float(xi1[0]), float(xi2[0])
    return (t, *(float(v[k - 1] + share * (v[k] - v[k - 1])) for v in (xi1, xi2)))


# --- the Jensen step of Lemma 9's proof (Eq. C.18) -------------------------------------------------------------

#: the Jensen step's two readings of ``E[s_j]``: the population mean, and the prompt's own mean
JENSEN = {
    "jensen_population": "Jensen step (Lemma 9, C.18): Σ_j s_j e^{−2ξ1 s_j} ≤ N e^{−2ξ1 E[s]} E[s], E[s] = 1",
    "jensen_prompt": "Jensen step (Lemma 9, C.18), E[s] read as the prompt's mean s̄",
}


def jensen_term(xi1: float, s: np.ndarray) -> np.ndarray:
    """``s e^{-2 xi1 s}`` at the distance terms ``s = 1 - t`` (``= |x_j - x_q|^2 / 2`` in ``[0, 2]``)."""
    return s * np.exp(-2.0 * xi1 * s)


def jensen_sides(xi1: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per prompt of inner products ``t`` (n, N): ``left = sum_j s_j e^{-2 xi1 s_j}``, the right side with
    ``E[s_j]`` the population mean (1: ``E t = 0``), ``N e^{-2 xi1}``, and with it the prompt's own mean
    ``sbar``, ``N sbar e^{-2 xi1 sbar}``: three arrays (n,)."""
    s = 1.0 - np.asarray(t, dtype=np.float64)
    N = s.shape[1]
    left = jensen_term(xi1, s).sum(axis=1)
    return left, np.full(s.shape[0], N * math.exp(-2.0 * xi1)), N * jensen_term(xi1, s.mean(axis=1))


def jensen_mean_left(xi1: float, N: int, d: int) -> float:
    """``E[sum_j s_j e^{-2 xi1 s_j}] = N E[s e^{-2 xi1 s}]`` over the law of one inner product, by quadrature (in
    ``u = 2 xi1 s`` when ``xi1 > 1``: the integrand lives within ``1/xi1`` of ``s = 0``)."""
    if xi1 <= 1.0:
        value, _ = quad(
            lambda t: (1 - t) * math.exp(-2 * xi1 * (1 - t)) * float(inner_product_density(t, d)),
            -1,
            1,
            epsabs=0.0,
            epsrel=1e-11,
        )
        return N * value
    scale = 2.0 * xi1

    def integrand(u: float) -> float:
        return (u / scale) * math.exp(-u) * float(inner_product_density(1.0 - u / scale, d)) / scale

    top = 2.0 * scale
    cut = min(top, 80.0)
    value, _ = quad(
        integrand, 0.0, cut, limit=200, points=[p for p in (1.0, 10.0) if p < cut], epsabs=0.0, epsrel=1e-11
    )
    return N * value


def jensen_threshold(d: int) -> float:
    """The ``xi1`` above which the Jensen step's expectations fail in the population reading: the root of
    ``E[s e^{-2 xi1 s}] = e^{-2 xi1}`` (``E[s] = 1``; ``N`` cancels). Below it the left side is the smaller
    (``E[s^2] = 1 + 1/d > 1`` at first order in ``xi1``); at large ``xi1`` ``E[s e^{-2 xi1 s}]`` falls only like a
    power of ``xi1``."""

    def gap(xi1: float) -> float:
        return math.log(jensen_mean_left(xi1, 1, d)) + 2.0 * xi1

    return float(brentq(gap, 1e-3, 20.0, xtol=1e-12))
