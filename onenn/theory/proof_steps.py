"""The convergence proof's inequalities (``reduced.proof_steps``) along an audit's trajectories (docs/method.md
§7.6): at every recorded point of the population flow, its rate from the population quadrature at the audit's
nodes (source ``population``) and at half of them in each variable (``population/2``, the resolution test); at
every recorded point of exact GD on the weighted sample, its rate from that sample (``gd``: GD's own increments
over ``lr``). The Jensen step at the population flow's points, its expectations and the share of prompts where
it fails from the weighted sample. Reuses the audit's table; recomputes only the rates at its points.

One row per (variant, source, reading, inequality, point): ``left``, ``right``, ``margin`` (positive where it
holds), ``c_d_bound`` (Lemmas 8 and 10: the largest ``C_d`` for which the point satisfies it; their sides are
evaluated at the smallest of these along the trajectory, the largest ``C_d`` for which the lemma holds on all of
it), ``inside``
(before the trajectory's first crossing of ``xi1/xi2 = 7/15``: where the proof uses the lemma) and, for the
Jensen step, ``fail_share`` (the population's share of prompts where it fails). Lemma 12's conditions also at the
crossing (point ``crossing``) and at ``(7 sigma/15, sigma)`` (point ``start``), where the crossing would come first.
Every row also carries ``N``, ``d``, ``printed_threshold`` (the ``xi2`` above which the printed form of Lemma 12's
condition holds on the line ``xi1 = (7/15) xi2``), ``lemma12_threshold`` (Lemma 12's bound on ``sigma``) and
``jensen_threshold`` (the ``xi1`` above which the Jensen step's expectations fail, population reading).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from onenn.maths.family import XI_RATIO_BOUND
from onenn.maths.stream import numpy_generator
from onenn.theory.audit import AuditSettings
from onenn.theory.reduced import proof_steps as ps
from onenn.theory.reduced.loss import prepare
from onenn.theory.reduced.population import PANEL, population_loss_grad, quadrature
from onenn.theory.reduced.sampling import audit_sample
from onenn.theory.reduced.thresholds import resolve_sigma, sigma_threshold_lemma12

#: the sources: the population flow's points at the audit's nodes and at half of them, GD's points on the sample
SOURCES = ("population", "population/2", "gd")
#: the reading of a row whose inequality does not involve the rate
NO_READING = "–"


def reading(loss_factor: float) -> str:
    """The name of a reading: the rate of ``L`` (``1/2`` in the loss) or of ``2 L``."""
    return "L" if loss_factor == 1.0 else f"{loss_factor:g}L"


def weighted_sample(s: AuditSettings) -> tuple[np.ndarray, np.ndarray]:
    """The audit's weighted sample (``audit_sample``, stream 0 of the seed: the one its GD runs on)."""
    t, w, _ = audit_sample(s.n_plain, s.n_max, s.n_gap, s.N, s.d, numpy_generator(s.seed, "audit", 0), s.gap_min)
    return t, w


def _inside(time: np.ndarray, xi1: np.ndarray, xi2: np.ndarray) -> np.ndarray:
    """Where the proof uses its lemmas: before the trajectory's first crossing of ``xi1/xi2 = 7/15``."""
    t_cross = ps.crossing(time, xi1, xi2)[0]
    return np.ones(time.size, dtype=bool) if math.isnan(t_cross) else time < t_cross


def _rows(
    source: str, time: np.ndarray, xi1: np.ndarray, xi2: np.ndarray, grads: np.ndarray, s: AuditSettings
) -> list[pd.DataFrame]:
    """Every rate inequality, in both readings, and Lemma 12's conditions, at the points of one trajectory."""
    inside = _inside(time, xi1, xi2)
    out = []
    for factor in ps.LOSS_FACTORS:
        xi1_dot, xi2_dot = ps.rate(grads[:, 0], grads[:, 1], s.d, factor)
        for ineq in ps.INEQUALITIES:
            if not ineq.needs_rate and factor != ps.LOSS_FACTORS[0]:
                continue
            bound = ps.largest_c_d(ineq.name, xi1, xi2, xi1_dot, xi2_dot, s.N, s.d) if ineq.c_d else np.nan
            c_d = float(np.min(bound)) if ineq.c_d else 1.0  # the largest C_d for the whole trajectory
            left, right = ps.sides(ineq.name, xi1, xi2, xi1_dot, xi2_dot, s.N, s.d, c_d)
            frame = {"left": left, "right": right, "margin": ps.margin(left, right, ineq.upper), "c_d_bound": bound}
            out.append(
                pd.DataFrame(
                    {
                        "source": source,
                        "reading": reading(factor) if ineq.needs_rate else NO_READING,
                        "inequality": ineq.name,
                        "label": ineq.label,
                        "point": "trajectory",
                        "time": time,
                        "xi1": xi1,
                        "xi2": xi2,
                        "inside": inside,
                        **frame,
                    }
                )
            )
    return out


def _lemma12_points(source: str, time: np.ndarray, xi1: np.ndarray, xi2: np.ndarray, s: AuditSettings, sigma: float):
    """Lemma 12's conditions where ``xi1 = (7/15) xi2`` is reached (``crossing``) and at ``(7 sigma/15, sigma)``."""
    t_cross, a, b = ps.crossing(time, xi1, xi2)
    points = [("crossing", t_cross, a, b)] if not math.isnan(t_cross) else []
    if source == "population":
        points.append(("start", math.nan, XI_RATIO_BOUND * sigma, sigma))
    out = []
    for point, t, a, b in points:
        for name in ps.LEMMA12:
            left, right = ps.sides(name, np.array([a]), np.array([b]), None, None, s.N, s.d)
            m = ps.margin(left, right, ps.BY_NAME[name].upper)
            out.append(
                pd.DataFrame(
                    {
                        "source": source,
                        "reading": NO_READING,
                        "inequality": name,
                        "label": ps.BY_NAME[name].label,
                        "point": point,
                        "time": t,
                        "xi1": a,
                        "xi2": b,
                        "inside": True,
                        "left": left,
                        "right": right,
                        "margin": m,
                        "c_d_bound": np.nan,
                    }
                )
            )
    return out


def _jensen_rows(time: np.ndarray, xi1: np.ndarray, xi2: np.ndarray, inside: np.ndarray, t, w, s) -> pd.DataFrame:
    """The Jensen step at the population flow's points: its two readings of ``E[s_j]``."""
    rows = []
    for k in range(time.size):
        left, right_population, right_prompt = ps.jensen_sides(float(xi1[k]), t)
        exact = ps.jensen_mean_left(float(xi1[k]), s.N, s.d)
        for name, right, mean_right in (
            ("jensen_population", right_population, float(right_population[0])),
            ("jensen_prompt", right_prompt, float(right_prompt @ w)),
        ):
            mean_left = exact if name == "jensen_population" else float(left @ w)
            rows.append(
                {
                    "inequality": name,
                    "label": ps.JENSEN[name],
                    "time": time[k],
                    "xi1": xi1[k],
                    "xi2": xi2[k],
                    "inside": inside[k],
                    "left": mean_left,
                    "right": mean_right,
                    "margin": float(ps.margin(mean_left, mean_right, upper=True)),
                    "fail_share": float(w @ (left > right)),
                }
            )
    out = pd.DataFrame(rows)
    return out.assign(source="population", reading=NO_READING, point="trajectory", c_d_bound=np.nan)


def _variant(mine: pd.DataFrame, s: AuditSettings) -> list[pd.DataFrame]:
    """The rows of one variant: its population flow at both resolutions, its GD, its Jensen step."""
    sigma = resolve_sigma(s.sigma, s.N, s.d)
    pop = mine[mine["source"] == "population"].sort_values("time")
    time, xi1, xi2 = (pop[c].to_numpy(dtype=np.float64) for c in ("time", "xi1", "xi2"))
    parts = []
    for source, divisor in (("population", 1), ("population/2", 2)):
        n1, n2, n3 = s.t1_nodes // divisor, s.gap_nodes // divisor, s.third_nodes // divisor
        if n1 % (4 * PANEL) or n2 % PANEL or not n3:  # too few nodes to halve: no resolution test
            continue
        q = quadrature(s.N, s.d, n1, n2, s.seed, third_nodes=n3)
        grads = np.array([population_loss_grad(a, b, q)[1:3] for a, b in zip(xi1, xi2, strict=True)])
        parts += _rows(source, time, xi1, xi2, grads, s)
    parts += _lemma12_points("population", time, xi1, xi2, s, sigma)
    t, w = weighted_sample(s)
    prep = prepare(t, w)
    gd = mine[mine["source"] == "gd"].sort_values("time")
    g_time, g_xi1, g_xi2 = (gd[c].to_numpy(dtype=np.float64) for c in ("time", "xi1", "xi2"))
    grads = np.array([ps.mean_gradient(a, b, prep) for a, b in zip(g_xi1, g_xi2, strict=True)])
    parts += _rows("gd", g_time, g_xi1, g_xi2, grads, s)
    parts += _lemma12_points("gd", g_time, g_xi1, g_xi2, s, sigma)
    parts.append(_jensen_rows(time, xi1, xi2, _inside(time, xi1, xi2), t, w / w.sum(), s))
    constants = {
        "N": s.N,
        "d": s.d,
        "printed_threshold": ps.printed_threshold(s.N, s.d),
        "lemma12_threshold": sigma_threshold_lemma12(s.N, s.d),
        "jensen_threshold": ps.jensen_threshold(s.d),
    }
    return [p.assign(sigma=sigma, sigma_rule=str(s.sigma), **constants) for p in parts]


def proof_steps(table: pd.DataFrame, settings: dict[str, dict]) -> pd.DataFrame:
    """The inequalities along the trajectories of an audit's ``table`` (``run_audit``'s rows with ``variant``),
    each variant's audit settings from ``settings`` (variant -> settings)."""
    parts = []
    for variant, mine in table.groupby("variant", sort=True):
        if variant not in settings:
            raise ValueError(f"variant {variant!r} of the audit table has no settings (known: {', '.join(settings)})")
        parts += [p.assign(variant=variant) for p in _variant(mine, AuditSettings.from_dict(settings[variant]))]
    out = pd.concat(parts, ignore_index=True)
    first = [
        "variant",
        "sigma",
        "sigma_rule",
        "source",
        "reading",
        "inequality",
        "label",
        "point",
        "time",
        "xi1",
        "xi2",
    ]
    return out[first + [c for c in out.columns if c not in first]]
