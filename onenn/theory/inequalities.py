"""The binary paper's convergence proof, Lemmas 7-12 and the Jensen step of Lemma 9 (Eq. C.18), evaluated at a
point and along the audit's trajectories (docs/method.md §7.6): each bound as ``(left, right)`` and its margin."""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.integrate import quad
from scipy.optimize import brentq

from onenn.maths.family import XI_RATIO_BOUND, crossing
from onenn.theory.audit import AuditSettings, lemma12_a, resolve_sigma, sigma_threshold_lemma12, weighted_sample
from onenn.theory.reduced.population import PANEL, population_loss_grad, quadrature
from onenn.theory.reduced.sampling import inner_product_density

#: the readings' loss factors and names: ``L`` as the project defines it (1/2 in the square loss), and ``2L``
LOSS_FACTORS = {1.0: "L", 2.0: "2L"}
#: the reading of a row whose inequality does not involve the rate
NO_READING = "–"


@dataclass(frozen=True)
class Inequality:
    """``left <= right`` (``upper``) or ``left >= right``; ``c_d``: the right side has the unknown ``C_d``."""

    name: str
    label: str
    upper: bool
    c_d: bool = False


#: the inequalities, in the proof's order
INEQUALITIES = (
    Inequality("lemma8", "Lemma 8: d ξ̇1 + 2 ξ̇2 ≥ (1 − 1/(2N)) C_d e^{−6ξ1}", upper=False, c_d=True),
    Inequality("lemma9", "Lemma 9: ξ̇1 ≤ (2N/d) e^{−4ξ1/(N+1)²} − (a/(d N³ e)) e^{2(ξ1−ξ2)}", upper=True),
    Inequality("lemma10", "Lemma 10: d ξ̇1 ≥ (1 − 1/(2N)) C_d e^{−6ξ1} − 2 e^{2ξ1−2ξ2}", upper=False, c_d=True),
    Inequality("lemma10_step", "Lemma 10's step from Lemma 8: ξ̇2 ≤ e^{2ξ1−2ξ2}", upper=True),
    Inequality("lemma11", "Lemma 11: ξ̇2 ≥ e^{2aξ1 − 2ξ2} / ((N+1)³ e)", upper=False),
    Inequality("lemma7", "Lemma 7 (Theorem 1's upper bound): ξ̇2 ≤ e^{−ξ2/15}", upper=True),
    Inequality("lemma12", "Lemma 12, from Lemma 9: (2N/d) e^{−4ξ1/(N+1)²} < (a/(d N³ e)) e^{2(ξ1−ξ2)}", True),
    Inequality("lemma12_replaced", "Lemma 12, first term (2N/d) e^{−ξ1/2}: 2.5ξ1 > log(2N⁴e/a) + 2ξ2", False),
    Inequality("lemma12_printed", "Lemma 12, printed form: 2.5ξ1 > log(2N⁴e/a) + ξ2", False),
)
BY_NAME = {i.name: i for i in INEQUALITIES}
#: the Lemma 12 conditions: without rates (one reading), needed only where ``xi1 = (7/15) xi2`` is reached
LEMMA12 = ("lemma12", "lemma12_replaced", "lemma12_printed")
#: the Jensen step's two readings of ``E[s_j]``: the population mean, and the prompt's own mean
JENSEN = {
    "jensen_population": "Jensen step (Lemma 9, C.18): Σ_j s_j e^{−2ξ1 s_j} ≤ N e^{−2ξ1 E[s]} E[s], E[s] = 1",
    "jensen_prompt": "Jensen step (Lemma 9, C.18), E[s] read as the prompt's mean s̄",
}


def rate(grad_xi1: np.ndarray, grad_xi2: np.ndarray, d: int, loss_factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(xi1_dot, xi2_dot) = (-s dL/dxi1 / d, -s dL/dxi2)``: GD's rate on the family (``dynamics.gradient_descent``);
    ``s``, the reading's loss factor: 1 for the project's ``L`` (with its 1/2), 2 without."""
    return -loss_factor * np.asarray(grad_xi1) / d, -loss_factor * np.asarray(grad_xi2)


def printed_threshold(N: int, d: int) -> float:
    """``6 log(2 N^4 e / a)``: the ``xi2`` above which the printed Lemma 12 holds on ``xi1 = (7/15) xi2``."""
    return 6.0 * math.log(2 * N**4 * math.e / lemma12_a(N, d))


def _exp(x: np.ndarray) -> np.ndarray:  # an overflow gives inf
    with np.errstate(over="ignore"):
        return np.exp(x)


def sides(name, xi1, xi2, xi1_dot, xi2_dot, N: int, d: int, c_d: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(left, right)`` of inequality ``name`` at the points, ``a = a_{N,d}``; an overflow gives ``inf``."""
    xi1, xi2 = np.asarray(xi1, dtype=np.float64), np.asarray(xi2, dtype=np.float64)
    a = lemma12_a(N, d)
    first = (2 * N / d) * np.exp(-4 * xi1 / (N + 1) ** 2)
    query = (a / (d * N**3 * math.e)) * _exp(2 * (xi1 - xi2))
    growth = (1 - 1 / (2 * N)) * c_d * np.exp(-6 * xi1)
    log_term, tie = math.log(2 * N**4 * math.e / a), (N + 1) ** 3 * math.e
    cases = {  # each case evaluated only when named: the Lemma 12 conditions have no rates
        "lemma8": lambda: (d * xi1_dot + 2 * xi2_dot, growth),
        "lemma9": lambda: (np.asarray(xi1_dot, dtype=np.float64), first - query),
        "lemma10": lambda: (d * np.asarray(xi1_dot), growth - 2 * _exp(2 * xi1 - 2 * xi2)),
        "lemma10_step": lambda: (np.asarray(xi2_dot, dtype=np.float64), _exp(2 * xi1 - 2 * xi2)),
        "lemma11": lambda: (np.asarray(xi2_dot, dtype=np.float64), np.exp(2 * a * xi1 - 2 * xi2) / tie),
        "lemma7": lambda: (np.asarray(xi2_dot, dtype=np.float64), np.exp(-xi2 / 15)),
        "lemma12": lambda: (first, query),
        "lemma12_replaced": lambda: (2.5 * xi1, log_term + 2 * xi2),
        "lemma12_printed": lambda: (2.5 * xi1, log_term + xi2),
    }
    if name not in cases:
        raise ValueError(f"name must be one of {', '.join(BY_NAME)}; got {name!r}")
    return cases[name]()


def margin(left: np.ndarray, right: np.ndarray, upper: bool) -> np.ndarray:
    """``(right - left)/|left|`` (``upper``) or ``(left - right)/|left|``: positive where it holds."""
    left, right = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
    slack = right - left if upper else left - right
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return slack / np.abs(left)


def largest_c_d(name: str, xi1: np.ndarray, xi2: np.ndarray, xi1_dot: np.ndarray, xi2_dot: np.ndarray, N: int, d: int):
    """The largest ``C_d`` for which Lemma 8 or 10 holds at each point: ``(left + extra) e^{6 xi1} / (1 - 1/(2N))``,
    ``extra = 2 e^{2 xi1 - 2 xi2}`` for Lemma 10."""
    if name not in ("lemma8", "lemma10"):
        raise ValueError(f"name must be lemma8 or lemma10; got {name!r}")
    xi1, slack = np.asarray(xi1, dtype=np.float64), sides(name, xi1, xi2, xi1_dot, xi2_dot, N, d)[0]
    if name == "lemma10":
        slack = slack + 2 * _exp(2 * xi1 - 2 * np.asarray(xi2))
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(slack == 0, 0.0, slack * _exp(6 * xi1)) / (1 - 1 / (2 * N))


def jensen_sides(xi1: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per prompt of ``t`` (n, N): ``sum_j s_j e^{-2 xi1 s_j}``, ``N e^{-2 xi1}`` (``E[s] = 1``) and
    ``N sbar e^{-2 xi1 sbar}`` (the prompt's mean ``sbar``)."""
    s = 1.0 - np.asarray(t, dtype=np.float64)
    N, s_bar = s.shape[1], s.mean(axis=1)
    left = (s * np.exp(-2.0 * xi1 * s)).sum(axis=1)
    return left, np.full(s.shape[0], N * math.exp(-2.0 * xi1)), N * (s_bar * np.exp(-2.0 * xi1 * s_bar))


def jensen_mean_left(xi1: float, N: int, d: int) -> float:
    """``N E[s e^{-2 xi1 s}]`` over the law of one inner product, by quadrature (in ``u = 2 xi1 s`` for ``xi1 > 1``)."""
    if xi1 <= 1.0:

        def in_t(t: float) -> float:
            return (1 - t) * math.exp(-2 * xi1 * (1 - t)) * float(inner_product_density(t, d))

        return N * quad(in_t, -1, 1, epsabs=0.0, epsrel=1e-11)[0]
    scale = 2.0 * xi1

    def integrand(u: float) -> float:
        return (u / scale) * math.exp(-u) * float(inner_product_density(1.0 - u / scale, d)) / scale

    cut = min(2.0 * scale, 80.0)
    points = [p for p in (1.0, 10.0) if p < cut]
    return N * quad(integrand, 0.0, cut, limit=200, points=points, epsabs=0.0, epsrel=1e-11)[0]


def jensen_threshold(d: int) -> float:
    """The ``xi1`` above which the Jensen step fails in the population reading: ``E[s e^{-2 xi1 s}] = e^{-2 xi1}``."""
    return float(brentq(lambda xi1: math.log(jensen_mean_left(xi1, 1, d)) + 2.0 * xi1, 1e-3, 20.0, xtol=1e-12))


# --- along an audit's trajectories -----------------------------------------------------------------------------


def _inside(time: np.ndarray, xi1: np.ndarray, xi2: np.ndarray) -> np.ndarray:
    """Where the proof uses its lemmas: before the trajectory's first crossing of ``xi1/xi2 = 7/15``."""
    t_cross = crossing(time, xi1, xi2)[0]
    return np.ones(time.size, dtype=bool) if math.isnan(t_cross) else time < t_cross


def _rows(source: str, time, xi1, xi2, grads: np.ndarray, s: AuditSettings) -> list[pd.DataFrame]:
    """Every rate inequality, in both readings, and Lemma 12's conditions, at the points of one trajectory."""
    inside, out = _inside(time, xi1, xi2), []
    for factor, read in LOSS_FACTORS.items():
        xi1_dot, xi2_dot = rate(grads[:, 0], grads[:, 1], s.d, factor)
        for ineq in INEQUALITIES:
            if ineq.name in LEMMA12 and factor != 1.0:
                continue
            bound = largest_c_d(ineq.name, xi1, xi2, xi1_dot, xi2_dot, s.N, s.d) if ineq.c_d else np.nan
            c_d = float(np.min(bound)) if ineq.c_d else 1.0  # the largest C_d for the whole trajectory
            sided = sides(ineq.name, xi1, xi2, xi1_dot, xi2_dot, s.N, s.d, c_d)
            reading = NO_READING if ineq.name in LEMMA12 else read
            out.append(_frame(source, reading, ineq, "trajectory", time, xi1, xi2, inside, *sided, bound))
    return out


def _frame(source: str, read: str, ineq: Inequality, point: str, time, xi1, xi2, inside, left, right, bound):
    """One inequality's rows, its sides ``left``, ``right`` and margin at the points ``(time, xi1, xi2)``."""
    columns = {"source": source, "reading": read, "inequality": ineq.name, "label": ineq.label, "point": point}
    columns |= {"time": time, "xi1": xi1, "xi2": xi2, "inside": inside, "left": left, "right": right}
    return pd.DataFrame(columns | {"margin": margin(left, right, ineq.upper), "c_d_bound": bound})


def _lemma12_points(source: str, time, xi1, xi2, s: AuditSettings, sigma: float) -> list[pd.DataFrame]:
    """Lemma 12's conditions where ``xi1 = (7/15) xi2`` is reached (``crossing``) and at ``(7 sigma/15, sigma)``."""
    t_cross, a, b = crossing(time, xi1, xi2)
    points = [("crossing", t_cross, a, b)] if not math.isnan(t_cross) else []
    if source == "population":
        points.append(("start", math.nan, XI_RATIO_BOUND * sigma, sigma))
    out = []
    for point, t, a, b in points:
        for name in LEMMA12:
            sided = sides(name, np.array([a]), np.array([b]), None, None, s.N, s.d)
            out.append(_frame(source, NO_READING, BY_NAME[name], point, t, a, b, True, *sided, np.nan))
    return out


def _jensen_rows(time, xi1, xi2, inside, t: np.ndarray, w: np.ndarray, s: AuditSettings) -> pd.DataFrame:
    """The Jensen step at the population flow's points, in its two readings of ``E[s_j]``."""
    rows = []
    for k in range(time.size):
        left, right_population, right_prompt = jensen_sides(float(xi1[k]), t)
        exact = jensen_mean_left(float(xi1[k]), s.N, s.d)
        for name, right, mean_left, mean_right in (
            ("jensen_population", right_population, exact, float(right_population[0])),
            ("jensen_prompt", right_prompt, float(left @ w), float(right_prompt @ w)),
        ):
            rows.append(
                {"inequality": name, "label": JENSEN[name], "time": time[k], "xi1": xi1[k], "xi2": xi2[k]}
                | {"inside": inside[k], "left": mean_left, "right": mean_right}
                | {"margin": float(margin(mean_left, mean_right, upper=True)), "fail_share": float(w @ (left > right))}
            )
    return pd.DataFrame(rows).assign(source="population", reading=NO_READING, point="trajectory", c_d_bound=np.nan)


def _points(frame: pd.DataFrame, columns: tuple[str, ...] = ("time", "xi1", "xi2")) -> tuple[np.ndarray, ...]:
    return tuple(frame.sort_values("time")[c].to_numpy(dtype=np.float64) for c in columns)


def _variant(mine: pd.DataFrame, s: AuditSettings) -> list[pd.DataFrame]:
    """One variant's rows: its population flow at both resolutions, its GD, its Jensen step."""
    sigma = resolve_sigma(s.sigma, s.N, s.d)
    time, xi1, xi2 = _points(mine[mine["source"] == "population"])
    parts = []
    for source, divisor in (("population", 1), ("population/2", 2)):
        n1, n2, n3 = s.t1_nodes // divisor, s.gap_nodes // divisor, s.third_nodes // divisor
        if n1 % (4 * PANEL) or n2 % PANEL or not n3:  # too few nodes to halve: no resolution test
            continue
        q = quadrature(s.N, s.d, n1, n2, s.seed, third_nodes=n3)
        grads = np.array([population_loss_grad(a, b, q)[1:3] for a, b in zip(xi1, xi2, strict=True)])
        parts += _rows(source, time, xi1, xi2, grads, s)
    parts += _lemma12_points("population", time, xi1, xi2, s, sigma)
    g_time, g_xi1, g_xi2, *grads = _points(mine[mine["source"] == "gd"], ("time", "xi1", "xi2", "grad_xi1", "grad_xi2"))
    parts += _rows("gd", g_time, g_xi1, g_xi2, np.column_stack(grads), s)  # the gradients the audit recorded
    parts += _lemma12_points("gd", g_time, g_xi1, g_xi2, s, sigma)
    t, w = weighted_sample(s)[:2]
    parts.append(_jensen_rows(time, xi1, xi2, _inside(time, xi1, xi2), t, w / w.sum(), s))
    constants = {"N": s.N, "d": s.d, "printed_threshold": printed_threshold(s.N, s.d)}
    constants |= {"lemma12_threshold": sigma_threshold_lemma12(s.N, s.d), "jensen_threshold": jensen_threshold(s.d)}
    return [p.assign(sigma=sigma, sigma_rule=str(s.sigma), **constants) for p in parts]


#: the first columns of ``inequalities_table``
FIRST = ["variant", "sigma", "sigma_rule", "source", "reading", "inequality", "label", "point", "time", "xi1", "xi2"]


def inequalities_table(table: pd.DataFrame, settings: dict[str, dict]) -> pd.DataFrame:
    """One row per (variant, source, reading, inequality, point) of an audit's ``table``, its settings ``settings``."""
    parts = []
    for variant, mine in table.groupby("variant", sort=True):
        if variant not in settings:
            raise ValueError(f"variant {variant!r} of the audit table has no settings (known: {', '.join(settings)})")
        parts += [p.assign(variant=variant) for p in _variant(mine, AuditSettings.from_dict(settings[variant]))]
    out = pd.concat(parts, ignore_index=True)
    return out[FIRST + [c for c in out.columns if c not in FIRST]]
