"""The scorecard: each claim of the paper (``workflow/claims.yaml``) against this run's tables, with a verdict.
No torch. The rule is stated once, in docs/claims.md; in short:

- **equal**: at each point ``z = (ours − paper) / s`` with ``s² = sd² + se_test² + spread² + (resolution/2)²``:
  our seed sd, the test set's sampling error of an accuracy (``√(p(1−p)/test_size)``: every seed is scored on
  the same prompts, so the seed sd does not show it), the paper's ± and half the paper's printed precision.
  *Agrees* when ``Σ z² ≤ χ²_m(LEVEL)`` over the ``m`` points (for one point: ``|z| ≤ 2``); else *agrees in
  direction* when the claim has a baseline and at every point ours lies beyond it, by more than ``2s``, on the
  paper's side; else *differs*.
- **constant**: ``z`` of each point from the inverse-variance mean of its group (``by``); agrees when
  ``Σ z² ≤ χ²_dof(LEVEL)``, ``dof = Σ (m_g − 1)``.
- **increasing / decreasing**: agrees when the means are strictly ordered as the points are listed.
- **below / above**: agrees when every point is more than ``2s`` below (above) the bound.
- **decays**: agrees when every point's mean falls at each saved step of the run's last decade of steps and ends
  more than ``2s`` below its start.
- **not run**: no point of the claim is in this run's tables (a claim judged on some of its points says so).

Kind scaling has no seeds: its ``sd`` is the standard error of the estimate (``ratio_se``, ...), ``n`` the prompts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import gammaincinv

from onenn.analysis.summary import markdown_table
from onenn.base.claims import Claim, ClaimPoint
from onenn.base.columns import variant_name

#: the probability mass of a normal within two standard deviations: |z| ≤ 2 for one point
LEVEL = math.erf(math.sqrt(2.0))
VERDICTS = ("agrees", "agrees in direction", "differs", "not run")
COLUMNS = (
    "claim",
    "figure",
    "experiment",
    "check",
    "quantity",
    "paper",
    "paper_value",
    "paper_spread",
    "ours_mean",
    "ours_sd",
    "n",
    "z",
    "statistic",
    "dof",
    "limit",
    "points",
    "points_run",
    "verdict",
    "detail",
    "note",
)


def chi2_limit(dof: int) -> float:
    """The ``LEVEL`` quantile of χ² with ``dof`` degrees of freedom (4 for one)."""
    return float(2.0 * gammaincinv(dof / 2.0, LEVEL))


@dataclass
class Measured:
    """Our value at one point: mean and sd over seeds (kind scaling: the estimate and its standard error)."""

    label: str
    mean: float
    sd: float
    n: int
    test_se: float = 0.0
    paper: float | None = None  # the paper's value (or the bound), where the check has one
    spread: float = 0.0  # the paper's ±
    baseline: float | None = None
    series: tuple[float, ...] = ()  # check decays: the mean at step 0, then over the run's last decade of steps
    group: Any = None  # check constant: the value of the claim's ``by`` column
    z: float = math.nan


# --- our numbers ---------------------------------------------------------------------------------------------


def per_seed(rows: pd.DataFrame, claim: Claim) -> pd.DataFrame:
    """One row per seed: the claim's quantity (``value``), with the run's ``test_size``."""
    q = claim.quantity
    values = rows[q.column] * (rows["K"] / (rows["K"] - 1) if q.divide_by else 1.0)
    runs = rows.assign(value=values).sort_values(["seed", "step"], kind="stable").groupby("seed", sort=True)
    first, last = runs["value"].first(), runs["value"].last()
    if q.of == "ratio":
        value = last / first
    elif q.of == "change":
        value = last - first
    else:
        value = first if q.step == "first" else last
    return pd.DataFrame({"value": value, "test_size": runs["test_size"].first()}).reset_index()


def decay_series(rows: pd.DataFrame, column: str) -> tuple[float, ...]:
    """Check decays: the seed mean of ``column`` at step 0, then at every saved step of the run's last decade
    (step ≥ last step / 10)."""
    means = rows.groupby("step", sort=True)[column].mean()
    decade = means[means.index >= means.index.max() / 10.0]
    return (float(means.iloc[0]), *(float(v) for v in decade))


def train_point(table: pd.DataFrame, claim: Claim, point: ClaimPoint) -> Measured | None:
    q = claim.quantity
    rows = table[table["variant"] == point.variant]
    if q.test_set is not None:
        rows = rows[rows["test_set"] == q.test_set]
    elif len(rows):
        rows = rows[rows["test_set"] == rows["test_set"].iloc[0]]  # a property of the weights: one set suffices
    if not len(rows):
        return None
    seeds = per_seed(rows, claim)
    mean = float(seeds["value"].mean())
    sd = float(seeds["value"].std(ddof=1)) if len(seeds) > 1 else 0.0
    test_se = 0.0
    if q.column == "accuracy" and q.of == "value":  # binomial error of the shared test set
        test_se = math.sqrt(max(mean * (1.0 - mean), 0.0) / float(seeds["test_size"].iloc[0]))
    return Measured(
        str(point.variant),
        mean,
        sd,
        len(seeds),
        test_se,
        series=decay_series(rows, q.column) if claim.check == "decays" else (),
        group=rows[claim.by].iloc[0] if claim.by else None,
        **paper_side(point, None),
    )


def paper_side(point: ClaimPoint, row: pd.Series | None) -> dict[str, Any]:
    value = point.value
    if value == "reference":
        value = row["reference"]
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
    for point in claim.points:
        label = point.variant or "+".join(f"{k}={v}" for k, v in point.where.items())
        if table is None:
            missing.append(label)
        elif claim.kind == "scaling":
            got = scaling_points(table, claim, point)
            found += got
            missing += [] if got else [label]
        else:
            got = train_point(table, claim, point)
            if got is None:
                missing.append(label)
            else:
                found.append(got)
    return found, missing


# --- the verdict rule ----------------------------------------------------------------------------------------


def ratio(difference: float, spread: float) -> float:
    """``difference / spread``; with no spread, 0 for no difference and ±inf otherwise."""
    if spread > 0:
        return difference / spread
    return 0.0 if difference == 0 else math.copysign(math.inf, difference)


def ours_spread(m: Measured) -> float:
    return math.hypot(m.sd, m.test_se)


def combined_spread(m: Measured, resolution: float) -> float:
    """Check equal: our sd, the test set's error, the paper's ± and half its printed precision."""
    return math.sqrt(m.sd**2 + m.test_se**2 + m.spread**2 + (resolution / 2.0) ** 2)


def judge_equal(points: list[Measured], claim: Claim) -> dict[str, Any]:
    for m in points:
        m.z = ratio(m.mean - m.paper, combined_spread(m, claim.resolution))
    statistic = float(sum(m.z**2 for m in points))
    limit = chi2_limit(len(points))
    verdict = "agrees" if statistic <= limit else "differs"
    if verdict == "differs" and all(m.baseline is not None for m in points):
        beyond = [
            np.sign(m.paper - m.baseline) * ratio(m.mean - m.baseline, combined_spread(m, claim.resolution)) > 2.0
            for m in points
        ]
        if all(beyond):
            verdict = "agrees in direction"
    return {"verdict": verdict, "statistic": statistic, "dof": len(points), "limit": limit}


def judge_constant(points: list[Measured], claim: Claim) -> dict[str, Any]:
    dof = 0
    for key in dict.fromkeys(m.group for m in points):
        members = [m for m in points if m.group == key]
        spreads = np.array([ours_spread(m) for m in members])
        means = np.array([m.mean for m in members])
        exact = spreads == 0
        centre = means[exact].mean() if exact.any() else np.average(means, weights=spreads**-2.0)
        for m, s in zip(members, spreads):
            m.z = ratio(m.mean - centre, float(s))
        dof += len(members) - 1
    statistic = float(sum(m.z**2 for m in points))
    limit = chi2_limit(dof) if dof else math.nan
    verdict = "agrees" if dof and statistic <= limit else "differs"
    return {"verdict": verdict, "statistic": statistic, "dof": dof, "limit": limit}


def judge_bound(points: list[Measured], claim: Claim) -> dict[str, Any]:
    sign = 1.0 if claim.check == "above" else -1.0
    for m in points:
        m.z = ratio(m.mean - m.paper, ours_spread(m))
    return {"verdict": "agrees" if all(sign * m.z > 2.0 for m in points) else "differs"}


def judge_order(points: list[Measured], claim: Claim) -> dict[str, Any]:
    steps = np.diff([m.mean for m in points])
    ordered = (steps > 0).all() if claim.check == "increasing" else (steps < 0).all()
    return {"verdict": "agrees" if len(points) > 1 and ordered else "differs"}


def judge_decays(points: list[Measured], claim: Claim) -> dict[str, Any]:
    """Falling at every saved step of the last decade, and at the end more than 2 sd below the start."""
    for m in points:
        m.z = ratio(m.series[-1] - m.series[0], m.sd)
    falling = [len(m.series) > 2 and bool((np.diff(m.series[1:]) < 0).all()) for m in points]
    return {"verdict": "agrees" if all(falling) and all(m.z < -2.0 for m in points) else "differs"}


def judge(points: list[Measured], claim: Claim) -> dict[str, Any]:
    if claim.check == "equal":
        return judge_equal(points, claim)
    if claim.check == "constant":
        return judge_constant(points, claim)
    if claim.check in ("below", "above"):
        return judge_bound(points, claim)
    if claim.check == "decays":
        return judge_decays(points, claim)
    return judge_order(points, claim)


# --- one row per claim ---------------------------------------------------------------------------------------


def shown(points: list[Measured], check: str) -> Measured | None:
    """The point the row shows: the one farthest from agreeing."""
    if not points or check in ("increasing", "decreasing"):
        return None
    if check == "above":
        return min(points, key=lambda m: m.z)
    if check == "below":
        return max(points, key=lambda m: m.z)
    if check == "decays":  # the smallest fall relative to the start
        return max(points, key=lambda m: m.series[-1] / m.series[0] if m.series[0] else math.inf)
    return max(points, key=lambda m: abs(m.z))


def number(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4g}"


def describe_point(m: Measured, check: str) -> str:
    ours = f"{number(m.mean)} ± {m.sd:.2g}"
    if check == "decays":
        falling = "falling" if (np.diff(m.series[1:]) < 0).all() else "not falling"
        return f"{m.label}: {number(m.series[0])} → {number(m.series[-1])}, {falling} over the last decade of steps"
    paper = "" if m.paper is None else f" vs {number(m.paper)}" + (f" ± {number(m.spread)}" if m.spread else "")
    z = "" if math.isnan(m.z) else f" (z = {m.z:+.2f})"
    return f"{m.label}: {ours}{paper}{z}"


def score(claim: Claim, table: pd.DataFrame | None) -> dict[str, Any]:
    """The scorecard's row of one claim."""
    found, missing = measure(table, claim)
    row: dict[str, Any] = {
        "claim": claim.id,
        "figure": claim.figure,
        "experiment": claim.experiment,
        "check": claim.check,
        "quantity": f"{claim.quantity.column} ± se" if claim.kind == "scaling" else claim.quantity.describe(),
        "paper": claim.paper,
        "points": len(found) + len(missing),
        "points_run": len(found),
        "note": claim.note,
    }
    if not found:
        return row | {"verdict": "not run", "detail": "not in this run: " + ", ".join(missing)}
    row |= judge(found, claim)
    worst = shown(found, claim.check)
    if worst is not None:
        row |= {
            "paper_value": worst.paper,
            "paper_spread": worst.spread if claim.check == "equal" else None,
            "ours_mean": worst.mean,
            "ours_sd": worst.sd,
            "z": math.nan if claim.check == "decays" else worst.z,  # decays: a fall, not a distance to a value
        }
    row["n"] = min(m.n for m in found)
    detail = "; ".join(describe_point(m, claim.check) for m in found)
    row["detail"] = detail + ("; not in this run: " + ", ".join(missing) if missing else "")
    return row


def scorecard(claims: Sequence[Claim], tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per claim, in the order of ``claims``; experiments missing from ``tables`` are not run."""
    rows = [score(c, tables.get(c.experiment)) for c in claims]
    out = pd.DataFrame(rows).reindex(columns=list(COLUMNS))
    for column in ("paper_value", "paper_spread", "ours_mean", "ours_sd", "z", "statistic", "limit"):
        out[column] = pd.to_numeric(out[column], errors="coerce").astype("float64")
    for column in ("figure", "points", "points_run"):
        out[column] = out[column].astype("int64")
    for column in ("n", "dof"):
        out[column] = out[column].astype("Int64")  # none where no point ran, or the check has no statistic
    for column in ("claim", "experiment", "check", "quantity", "paper", "verdict", "detail", "note"):
        out[column] = out[column].astype("string")
    return out


# --- Markdown and the jobs ------------------------------------------------------------------------------------


def paper_cell(row: pd.Series) -> str:
    if pd.isna(row["paper_value"]):
        return "–"
    spread = f" ± {number(row['paper_spread'])}" if row["paper_spread"] and not pd.isna(row["paper_spread"]) else ""
    return number(row["paper_value"]) + spread


def ours_cell(row: pd.Series) -> str:
    if pd.isna(row["ours_mean"]):
        return "–"
    return f"{number(row['ours_mean'])} ± {row['ours_sd']:.2g} (n = {row['n']})"


def test_cell(row: pd.Series) -> str:
    """The χ² statistic of checks equal and constant against its limit (for one point χ² = z², limit 4)."""
    if pd.isna(row["statistic"]) or pd.isna(row["dof"]):
        return "–"
    return f"χ²({row['dof']}) = {row['statistic']:.3g}, limit {row['limit']:.3g}"


def partly_run(row: pd.Series) -> str:
    """A verdict on some of the claim's points says on how many."""
    if row["verdict"] == "not run" or row["points_run"] == row["points"]:
        return ""
    return f" ({row['points_run']} of {row['points']} points run)"


def cell(text: object) -> str:
    """Text for a pipe-table cell (a ``|`` would split it)."""
    return str(text).replace("|", "∣")


def scale_lines(tables: dict[str, pd.DataFrame]) -> list[str]:
    """What this run measured: steps and seeds of every training table, prompts of every scaling table."""
    parts = []
    for name, table in tables.items():
        if "step" in table:
            parts.append(f"{name}: {int(table['step'].max())} steps × {table['seed'].nunique()} seeds")
        elif "prompts" in table:
            parts.append(f"{name}: {int(table['prompts'].min())}–{int(table['prompts'].max())} prompts a point")
    return [f"This run: {'; '.join(parts)}.", ""] if parts else []


INTRODUCTION = (
    "Each claim of the multiclass paper's section 5 (workflow/claims.yaml), its value, ours (mean ± sd over n "
    "seeds; for the scaling identity the estimate ± its standard error over n prompts), the difference z in "
    "units of the combined spread, and the verdict by the rule of docs/claims.md. Where a claim covers several "
    "points, the row shows the one farthest from agreeing and the test is χ² over all of them; every point is "
    "listed below."
)


def to_markdown(card: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> str:
    counts = card["verdict"].value_counts()
    tally = ", ".join(f"{v} {int(counts.get(v, 0))}" for v in VERDICTS)
    lines = [
        "# The paper's claims against this run",
        "",
        INTRODUCTION,
        "",
        *scale_lines(tables),
        f"Verdicts: {tally}.",
        "",
        "## Scorecard",
        "",
    ]
    header = ["claim", "fig.", "the paper says", "quantity", "paper", "ours", "z", "test", "verdict"]
    body = [
        [
            str(r["claim"]),
            str(r["figure"]),
            cell(r["paper"]),
            cell(f"{r['experiment']}: {r['quantity']}"),
            paper_cell(r),
            ours_cell(r),
            "–" if pd.isna(r["z"]) else f"{r['z']:+.2f}",
            test_cell(r),
            str(r["verdict"]) + partly_run(r),
        ]
        for _, r in card.iterrows()
    ]
    lines += [markdown_table(header, body), "", "## Every point", ""]
    body = [[str(r["claim"]), cell(part.strip())] for _, r in card.iterrows() for part in str(r["detail"]).split("; ")]
    lines += [markdown_table(["claim", "point: ours vs the paper's (z)"], body), ""]
    notes = [[str(r["claim"]), cell(r["note"])] for _, r in card.iterrows() if not pd.isna(r["note"]) and r["note"]]
    if notes:
        lines += ["## What is compared", "", markdown_table(["claim", "note"], notes), ""]
    return "\n".join(lines)
