"""The scorecard: each claim of ``workflow/claims.yaml`` against this run's tables (docs/claims.md): measured at
its points (``Measured``), judged (``onenn.analysis.verdict``), written as a row (``scorecard``). No torch."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from onenn.analysis.markdown import number
from onenn.analysis.verdict import (
    JUDGES,
    SLOPE_CHECKS,
    TEST_SET_KEY,
    Measured,
    is_chance_test,
    is_level,
    metric_bound,
    ours_spread,
    sampling_error,
    verdicts_at_test_sizes,
    why_differs,
)
from onenn.base.claim import Claim, ClaimPoint
from onenn.base.columns import se_column, variant_name

#: the scorecard's columns, in order, and what each means (docs/claims.md)
DESCRIPTIONS = {
    "claim": "the claim's id (workflow/claims.yaml), or our own row's",
    "source": "`paper`, or `ours` for a question of this project",
    "figure": "the paper's figure the claim is read from",
    "experiment": "the experiment that measures it",
    "check": "the claim's check: `equal`, `constant`, `increasing`, ... ([claims.md](claims.md))",
    "quantity": "what the claim is about (e.g. `accuracy`, `ratio`)",
    "paper": "what the paper says, in its words",
    "paper_value": "the paper's value",
    "paper_spread": "the paper's ±, where it gives one",
    "ours_mean": "our value: mean over seeds (or the estimate)",
    "ours_sd": "its sd over seeds (or its standard error)",
    "test_se": "the test set's sampling error",
    "paper_se": "the paper's sampling error at the test size assumed for it",
    "n": "seeds (or prompts) behind our value",
    "z": "difference in units of the combined spread, at the point farthest from agreeing",
    "statistic": "χ² over all the claim's points",
    "dof": "its degrees of freedom",
    "limit": "its limit at the verdict's level",
    "points": "how many points the claim has",
    "points_run": "how many of them this run has",
    "verdict": "`agrees`, `agrees in direction`, `differs` or `not run` (docs/claims.md)",
    "reading": "what a *differs* reads as (e.g. `still rising`); an *agrees in direction*: what held, what failed",
    "why": "a *differs* or *agrees in direction*: `explained` (a reason in docs/claims.md), `marginal` (χ² within its "
    "99.73% limit) or `not explained`",
    "reason": "the anchor of the claim's reason in docs/claims.md, where it has one",
    "post_hoc": "why the row is post-hoc (a hypothesis chosen after seeing a run); empty otherwise",
    "chance": "counted in the chance line: a level test with a spread on our side, run, not post-hoc",
    "test_sizes": "the verdicts at the other test sizes assumed for the paper, where they differ",
    "paper_test_size": "the test size assumed for the paper's numbers (workflow/claims.yaml; 0: none)",
    "paper_test_sizes": "the other assumed test sizes the verdict is recomputed at",
    "untested": "a part of the paper's sentence the check does not test",
    "detail": "every point, ours against the paper's (or what is not in this run)",
    "note": "the claim's note: what we compare and why",
}
COLUMNS = tuple(DESCRIPTIONS)
#: the columns' types but text (none of ``n`` and ``dof`` where no point ran, or the check has no statistic)
TYPES = dict.fromkeys(("paper_value", "paper_spread", "ours_mean", "ours_sd", "test_se", "paper_se", "z"), "float64")
TYPES |= dict.fromkeys(("statistic", "limit"), "float64") | {"n": "Int64", "dof": "Int64", "chance": "bool"}
TYPES |= dict.fromkeys(("figure", "points", "points_run", "paper_test_size"), "int64")


def prefactor(K: int) -> float:
    """``(K − 1)/K``, Lemma 2's factor."""
    return (K - 1) / K


def at_step(steps: np.ndarray, values: np.ndarray, step: float) -> float:
    """The value at ``step``, linear in ``log(step)`` between saved steps (step 0 left out)."""
    keep = steps > 0
    return float(np.interp(np.log(step), np.log(steps[keep]), values[keep]))


def decade_slope(steps: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope of ``values`` against ``log10(step)`` over the last decade of steps, as
    ``Σ (x − x̄)(y − y_0) / Σ (x − x̄)²``: exactly 0 for a series that does not move (no rounding sign to read)."""
    keep = (steps >= steps.max() / 10.0) & (steps > 0)
    x, y = np.log10(steps[keep]), values[keep]
    centred = x - x.mean()
    return float(np.sum(centred * (y - y[0])) / np.sum(centred**2))


def per_seed(rows: pd.DataFrame, claim: Claim, rescaled_time: float | None, column: str | None = None) -> pd.DataFrame:
    """One row per seed: the claim's quantity (``value``, at ``rescaled_time`` if given; a slope for the slope
    checks), its ``last`` value and the run's ``test_size``; ``column`` reads another column the same way."""
    q = claim.quantity
    values = rows[column or q.column] * (rows["K"] / (rows["K"] - 1) if q.divide_by else 1.0)
    if q.over and column is None:
        values = values / rows[q.over]
    runs = rows.assign(value=values).sort_values(["seed", "step"], kind="stable").groupby("seed", sort=True)
    first, last = runs["value"].first(), runs["value"].last()
    if claim.check in SLOPE_CHECKS:
        value = pd.Series({k: decade_slope(r["step"].to_numpy(), r["value"].to_numpy()) for k, r in runs})
    elif rescaled_time is not None:
        step = rescaled_time / prefactor(int(rows["K"].iloc[0]))
        value = pd.Series({k: at_step(r["step"].to_numpy(), r["value"].to_numpy(), step) for k, r in runs})
    elif q.of == "ratio":
        value = last / first
    elif q.of == "change":
        value = last - first
    else:
        value = first if q.step == "first" else last
    if q.at_least is not None:
        value = (value >= q.at_least).astype(float)
    frame = pd.DataFrame({"value": value, "last": last, "test_size": runs["test_size"].first()})
    return frame.rename_axis("seed").reset_index()


def train_point(table: pd.DataFrame, claim: Claim, point: ClaimPoint, rescaled_time: float | None) -> list[Measured]:
    q = claim.quantity
    rows = table[table["variant"] == point.variant]
    if q.test_set is not None:
        rows = rows[rows["test_set"] == q.test_set]
    elif len(rows):
        rows = rows[rows["test_set"] == rows["test_set"].iloc[0]]  # a property of the weights: one set suffices
    if not len(rows):
        return []
    seeds = per_seed(rows, claim, rescaled_time)
    if claim.versus is not None:  # per seed, minus the versus variant's (one seed number shares W0 and the stream)
        other = table[(table["variant"] == claim.versus) & (table["test_set"] == rows["test_set"].iloc[0])]
        if not len(other):
            return []
        theirs = per_seed(other, claim, rescaled_time).set_index("seed")
        ours = seeds.set_index("seed")
        both = ours.index.intersection(theirs.index)
        seeds = ours.loc[both].assign(value=ours["value"] - theirs["value"], last=ours["last"] - theirs["last"])
        if not len(seeds):
            return []
    mean = float(seeds["value"].mean())
    sd = float(seeds["value"].std(ddof=1)) if len(seeds) > 1 else 0.0
    m = Measured(str(point.variant), mean, sd, len(seeds), level=float(seeds["last"].mean()), **paper_side(point, None))
    m.group = rows[claim.by].iloc[0] if claim.by else None
    if is_level(claim):
        first = rows.iloc[0]
        bound = metric_bound(q.column, str(first.get("loss", "square")), float(first.get("c", 0.0)), int(first["K"]))
        scale = 1.0 / prefactor(int(first["K"])) if q.divide_by else 1.0
        se = se_column(q.column)  # the seeds' recorded standard errors, read as the level is, averaged (docs/claims.md)
        if se in rows and not rows[se].isna().any():
            m.test_se = float(per_seed(rows, claim, rescaled_time, se)["value"].mean())
        else:  # a table without the standard errors: the bound
            m.test_se = scale * sampling_error(mean / scale, bound, int(seeds["test_size"].iloc[0]))
        if m.paper is not None and claim.check == "equal":
            m.paper_se = scale * sampling_error(m.paper / scale, bound, claim.paper_test_size)
        m.test_key = tuple(first[k] for k in TEST_SET_KEY if k in first.index)
    if claim.check == "decays":  # the seed mean at step 0, then at every saved step of the last decade
        means = rows.groupby("step", sort=True)[q.column].mean()
        m.series = (float(means.iloc[0]), *(float(v) for v in means[means.index >= means.index.max() / 10.0]))
    return [m]


def paper_side(point: ClaimPoint, row: pd.Series | None) -> dict[str, Any]:
    value = row["reference"] if point.value == "reference" else point.value
    return {
        "paper": None if value is None else float(value),
        "spread": point.spread,
        "baseline": None if point.baseline is None else float(point.baseline),
    }


def scaling_points(table: pd.DataFrame, claim: Claim, point: ClaimPoint) -> list[Measured]:
    column = claim.quantity.column
    rows = table
    for key, value in point.where.items():
        rows = rows[rows[key] == value]
    return [
        Measured(
            variant_name({"panel": r["panel"], "xi1": r["xi1"], "xi2": r["xi2"], "K": r["K"]}),
            float(r[column]),
            float(r[f"{column}_se"]),
            int(r["prompts"]),
            group=r[claim.by] if claim.by else None,
            **paper_side(point, r),
        )
        for _, r in rows.iterrows()
    ]


def measure(table: pd.DataFrame | None, claim: Claim) -> tuple[list[Measured], list[str]]:
    """Our value at every point of the claim, and the labels of the points this run lacks."""
    found: list[Measured] = []
    missing: list[str] = []
    rescaled_time = None
    if table is not None and claim.kind != "scaling" and claim.quantity.time == "rescaled":
        # the largest ((K − 1)/K)·step that every point's runs reach
        rows = table[table["variant"].isin([p.variant for p in claim.points])]
        ends = rows.groupby("variant").agg(step=("step", "max"), K=("K", "first"))
        times = [step * prefactor(int(K)) for step, K in zip(ends["step"], ends["K"])]
        rescaled_time = float(min(times)) if times else None
    for point in claim.points:
        if table is None:
            got = []
        elif claim.kind == "scaling":
            got = scaling_points(table, claim, point)
        else:
            got = train_point(table, claim, point, rescaled_time)
        found += got
        missing += [] if got else [point.variant or "+".join(f"{k}={v}" for k, v in point.where.items())]
    return found, missing


def shortfall(m: Measured, claim: Claim, with_z: bool) -> float:
    """How far from agreeing (the row shows the farthest): by the z it prints (|z|, or against the bound's side);
    else in the quantity's units, by how far it misses the rule's 2 sd from the bound or a slope's 0 (flat: the
    resolution + 2 sd)."""
    side = {"above": 1.0, "rising": 1.0, "below": -1.0, "falling": -1.0}.get(claim.check)
    if claim.check == "decays":  # the smallest fall, last / first
        return m.series[-1] / m.series[0] if m.series[0] else math.inf
    if claim.check == "flat":
        return abs(m.mean) - claim.resolution - 2.0 * m.sd
    if side is None or with_z:
        return abs(m.z) if side is None else -side * m.z
    return 2.0 * ours_spread(m) - side * (m.mean - (m.paper if claim.check in ("above", "below") else 0.0))


#: the row's columns read from the point it shows (and ``paper_spread``, ``z``), and the point's field they read
WORST = {"paper_value": "paper", "ours_mean": "mean", "ours_sd": "sd", "test_se": "test_se", "paper_se": "paper_se"}


def describe_point(m: Measured, check: str, versus: str | None, with_z: bool) -> str:
    if check == "decays":
        falling = "falling" if (np.diff(m.series[1:]) < 0).all() else "not falling"
        factor = f", ×{m.series[-1] / m.series[1]:.3g} over it" if len(m.series) > 1 and m.series[1] else ""
        ends = f"{number(m.series[0])} → {number(m.series[-1])}"
        return f"{m.label}: {ends}, {falling} over the last decade of steps{factor}"
    if check in SLOPE_CHECKS:
        label, last = (f"{m.label} − {versus}", "difference at the last step") if versus else (m.label, "last step")
        return f"{label}: {m.mean:+.3g} ± {m.sd:.2g} per decade of steps ({last}: {number(m.level)})"
    if check == "share":  # Wilson's score interval at z = 2, (k + 2 ∓ 2·√(k(n − k)/n + 1))/(n + 4)
        k, half = m.mean * m.n, 2.0 * math.sqrt(m.n * m.mean * (1.0 - m.mean) + 1.0)
        interval = f"Wilson interval {number((k + 2.0 - half) / (m.n + 4))}–{number((k + 2.0 + half) / (m.n + 4))}"
        return f"{m.label}: {round(k)} of {m.n} seeds, {interval} vs {number(m.paper)} (z = {m.z:+.2f})"
    paper = "" if m.paper is None else f" vs {number(m.paper)}" + (f" ± {number(m.spread)}" if m.spread else "")
    z = "" if math.isnan(m.z) or not with_z else f" (z = {m.z:+.2f})"
    return f"{m.label}: {number(m.mean)} ± {m.sd:.2g}{paper}{z}"


def describe_quantity(claim: Claim) -> str:
    q = claim.quantity
    where = f" ({q.test_set})" if q.test_set else ""
    versus = f", minus the same seed's of {claim.versus}" if claim.versus else ""
    if claim.kind == "scaling":
        return f"{q.column} ± se"
    if claim.check == "decays":
        return f"{q.name()}{where}, over the last decade of steps"
    if claim.check in SLOPE_CHECKS:
        return f"{q.name()}{where}: change per decade of steps, over the last decade{versus}"
    return q.describe() + versus


def score(claim: Claim, table: pd.DataFrame | None) -> dict[str, Any]:
    """The scorecard's row of one claim."""
    found, missing = measure(table, claim)
    copied = ("source", "figure", "experiment", "check", "paper", "reason", "post_hoc", "untested", "paper_test_size")
    row: dict[str, Any] = {k: getattr(claim, k) for k in (*copied, "note")} | {
        "claim": claim.id,
        "quantity": describe_quantity(claim),
        "points": len(found) + len(missing),
        "points_run": len(found),
        "chance": is_chance_test(found, claim),
        "paper_test_sizes": ", ".join(map(str, claim.paper_test_sizes)),
    }
    row |= dict.fromkeys(("reading", "why", "test_sizes"), "")
    if not found:
        return row | {"verdict": "not run", "detail": "not in this run: " + ", ".join(missing)}
    sizes = verdicts_at_test_sizes(found, claim)
    row |= JUDGES[claim.check](found, claim) | {"n": min(m.n for m in found)}
    row["why"] = why_differs(row["verdict"], claim, row.get("statistic", math.nan), row.get("dof"))
    if len(set(sizes.values())) > 1:
        row["test_sizes"] = ", ".join(f"{v} at {size}" for size, v in sizes.items())
    # a z, the row's and each point's, but for decays and slopes, and for a bound without a test error (docs/claims.md)
    with_z = claim.check not in ("decays", *SLOPE_CHECKS)
    with_z &= claim.check not in ("below", "above") or any(m.test_se > 0 for m in found)
    if claim.check not in ("increasing", "decreasing"):
        worst = max(found, key=lambda m: shortfall(m, claim, with_z))
        row |= {column: getattr(worst, name) for column, name in WORST.items()}
        row |= {"paper_spread": worst.spread if claim.check == "equal" else None, "z": worst.z if with_z else math.nan}
    detail = "; ".join(describe_point(m, claim.check, claim.versus, with_z) for m in found)
    row["detail"] = detail + ("; not in this run: " + ", ".join(missing) if missing else "")
    return row


def scorecard(claims: Sequence[Claim], tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per claim, in the order of ``claims``; experiments missing from ``tables`` are not run."""
    out = pd.DataFrame([score(c, tables.get(c.experiment)) for c in claims]).reindex(columns=list(COLUMNS))
    return out.astype(dict.fromkeys(COLUMNS, "string") | TYPES)
