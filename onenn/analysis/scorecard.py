"""The scorecard: each claim of the paper (``workflow/claims.yaml``) against this run's tables, with a verdict.
No torch. Three steps, in this order here: measuring a claim in the tables (our value at each of its points, as
``onenn.analysis.verdict.Measured``: mean and sd over seeds, the test set's error ``recorded_test_se``, the values
at a common rescaled time), judging it by the verdict rule (``onenn.analysis.verdict``, the rule of
docs/claims.md), and writing the scorecard's rows (``scorecard``) and its Markdown page (``to_markdown``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from onenn.analysis.markdown import cell, markdown_table, number
from onenn.analysis.verdict import (
    LEVEL,
    MARGINAL_LEVEL,
    SLOPE_CHECKS,
    TEST_SET_KEY,
    VERDICTS,
    Measured,
    expected_by_chance,
    is_chance_test,
    is_level,
    judge,
    metric_bound,
    ratio,
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
    "reading": "what a *differs* reads as (e.g. `still rising`)",
    "why": "a *differs*: `explained` (a reason in docs/claims.md), `marginal` (χ² within its 99.73% limit) or "
    "`not explained`",
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
#: the columns a scorecard written before them lacks (or leaves empty), and their value there (``with_defaults``)
LATER_COLUMNS = {
    "reading": "",
    "why": "",
    "reason": "",
    "post_hoc": "",
    "chance": False,
    "test_sizes": "",
    "paper_test_size": 0,
    "paper_test_sizes": "",
    "untested": "",
}

#: where the reasons of docs/claims.md are, from the page (results/tables/ or results/readme/)
REASONS = "../../docs/claims.md"


# --- measuring a claim: our value at each of its points ------------------------------------------------------


def prefactor(K: int) -> float:
    """``(K − 1)/K``, Lemma 2's factor."""
    return (K - 1) / K


def at_step(steps: np.ndarray, values: np.ndarray, step: float) -> float:
    """The value at ``step``, linear in ``log(step)`` between the saved steps around it (step 0 left out)."""
    keep = steps > 0
    return float(np.interp(np.log(step), np.log(steps[keep]), values[keep]))


def decade_slope(steps: np.ndarray, values: np.ndarray) -> float:
    """The least-squares slope of ``values`` against ``log10(step)`` over the last decade of steps
    (steps ≥ last / 10): the change per decade of steps. Written as ``Σ (x − x̄)(y − y_0) / Σ (x − x̄)²`` (the
    same slope, since ``Σ (x − x̄) = 0``), so that a series that does not move has a slope of exactly 0, not a
    rounding error whose sign the sign rule would read."""
    keep = (steps >= steps.max() / 10.0) & (steps > 0)
    x, y = np.log10(steps[keep]), values[keep]
    centred = x - x.mean()
    return float(np.sum(centred * (y - y[0])) / np.sum(centred**2))


def per_seed(
    rows: pd.DataFrame, claim: Claim, rescaled_time: float | None = None, column: str | None = None
) -> pd.DataFrame:
    """One row per seed: the claim's quantity (``value``), with the run's ``test_size``. With ``rescaled_time``
    the value is read at the step where ``((K − 1)/K)·step`` equals it; the slope checks (flat, rising, falling)
    take the slope over the last decade of steps. ``column`` reads another column (a standard error) the same way
    as the claim's own."""
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
    frame = pd.DataFrame({"value": value, "last": last, "test_size": runs["test_size"].first()})
    return frame.rename_axis("seed").reset_index()


def common_rescaled_time(table: pd.DataFrame, claim: Claim) -> float | None:
    """``time: rescaled``: the largest rescaled time ``((K − 1)/K)·step`` that every point's runs reach."""
    if claim.quantity.time != "rescaled":
        return None
    rows = table[table["variant"].isin([p.variant for p in claim.points])]
    if not len(rows):
        return None
    ends = rows.groupby("variant").agg(step=("step", "max"), K=("K", "first"))
    return float(min(step * prefactor(int(K)) for step, K in zip(ends["step"], ends["K"])))


def decay_series(rows: pd.DataFrame, column: str) -> tuple[float, ...]:
    """Check decays: the seed mean of ``column`` at step 0, then at every saved step of the run's last decade
    (step ≥ last step / 10)."""
    means = rows.groupby("step", sort=True)[column].mean()
    decade = means[means.index >= means.index.max() / 10.0]
    return (float(means.iloc[0]), *(float(v) for v in decade))


def recorded_test_se(rows: pd.DataFrame, claim: Claim, rescaled_time: float | None = None) -> float | None:
    """The test-set error of the seed mean of a level from the table's standard errors over the prompts
    (``accuracy_se``, ...), read per seed as the level is, then averaged over the seeds: the seeds share the test
    set, so averaging them does not shrink it, and the mean of the seeds' errors bounds it (docs/claims.md).
    None where the table has no such column or a row lacks its value (a table written before them)."""
    column = se_column(claim.quantity.column)
    if column not in rows or rows[column].isna().any():
        return None
    return float(per_seed(rows, claim, rescaled_time, column)["value"].mean())


def train_point(
    table: pd.DataFrame, claim: Claim, point: ClaimPoint, rescaled_time: float | None = None
) -> Measured | None:
    q = claim.quantity
    rows = table[table["variant"] == point.variant]
    if q.test_set is not None:
        rows = rows[rows["test_set"] == q.test_set]
    elif len(rows):
        rows = rows[rows["test_set"] == rows["test_set"].iloc[0]]  # a property of the weights: one set suffices
    if not len(rows):
        return None
    seeds = per_seed(rows, claim, rescaled_time)
    if claim.versus is not None:
        seeds = paired_difference(seeds, versus_rows(table, claim, rows), claim, rescaled_time)
        if not len(seeds):
            return None
    mean = float(seeds["value"].mean())
    sd = float(seeds["value"].std(ddof=1)) if len(seeds) > 1 else 0.0
    first = rows.iloc[0]
    paper = paper_side(point, None)
    test_se = paper_se = 0.0
    test_key = None
    if is_level(claim):
        bound = metric_bound(q.column, str(first.get("loss", "square")), float(first.get("c", 0.0)), int(first["K"]))
        scale = 1.0 / prefactor(int(first["K"])) if q.divide_by else 1.0
        test_se = recorded_test_se(rows, claim, rescaled_time)
        if test_se is None:  # a table without the standard errors: the bound
            test_se = scale * sampling_error(mean / scale, bound, int(seeds["test_size"].iloc[0]))
        if paper["paper"] is not None and claim.check == "equal":
            paper_se = scale * sampling_error(paper["paper"] / scale, bound, claim.paper_test_size)
        test_key = tuple(first[k] for k in TEST_SET_KEY if k in first.index)
    return Measured(
        str(point.variant),
        mean,
        sd,
        len(seeds),
        test_se,
        series=decay_series(rows, q.column) if claim.check == "decays" else (),
        group=rows[claim.by].iloc[0] if claim.by else None,
        paper_se=paper_se,
        test_key=test_key,
        level=float(seeds["last"].mean()),
        **paper,
    )


def versus_rows(table: pd.DataFrame, claim: Claim, rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the claim's ``versus`` variant, on the same test set as ``rows``."""
    other = table[table["variant"] == claim.versus]
    return other[other["test_set"] == rows["test_set"].iloc[0]]


def paired_difference(
    seeds: pd.DataFrame, other: pd.DataFrame, claim: Claim, rescaled_time: float | None
) -> pd.DataFrame:
    """Per seed, the point's value minus the ``versus`` variant's at the same seed number: the runs of one seed
    number share ``W0`` and the minibatch stream (``stream_key(seed, "minibatches")``), so they pair."""
    if not len(other):
        return seeds.iloc[0:0]
    theirs = per_seed(other, claim, rescaled_time).set_index("seed")
    ours = seeds.set_index("seed")
    both = ours.index.intersection(theirs.index)
    out = ours.loc[both].copy()
    out["value"] = ours.loc[both, "value"] - theirs.loc[both, "value"]
    out["last"] = ours.loc[both, "last"] - theirs.loc[both, "last"]
    return out.rename_axis("seed").reset_index()


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
    rescaled_time = None if table is None or claim.kind == "scaling" else common_rescaled_time(table, claim)
    for point in claim.points:
        label = point.variant or "+".join(f"{k}={v}" for k, v in point.where.items())
        if table is None:
            missing.append(label)
        elif claim.kind == "scaling":
            got = scaling_points(table, claim, point)
            found += got
            missing += [] if got else [label]
        else:
            got = train_point(table, claim, point, rescaled_time)
            if got is None:
                missing.append(label)
            else:
                found.append(got)
    return found, missing


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
    if check == "rising":
        return min(points, key=lambda m: ratio(m.mean, m.sd))
    if check == "falling":
        return max(points, key=lambda m: ratio(m.mean, m.sd))
    if check == "flat":
        return max(points, key=lambda m: abs(m.mean))
    return max(points, key=lambda m: abs(m.z))


def describe_point(m: Measured, check: str, versus: str | None = None, with_z: bool = True) -> str:
    ours = f"{number(m.mean)} ± {m.sd:.2g}"
    if check == "decays":
        falling = "falling" if (np.diff(m.series[1:]) < 0).all() else "not falling"
        factor = f", ×{m.series[-1] / m.series[1]:.3g} over it" if len(m.series) > 1 and m.series[1] else ""
        return (
            f"{m.label}: {number(m.series[0])} → {number(m.series[-1])}, {falling} over the last decade of steps"
            + factor
        )
    if check in SLOPE_CHECKS:
        label, last = (f"{m.label} − {versus}", "difference at the last step") if versus else (m.label, "last step")
        return f"{label}: {m.mean:+.3g} ± {m.sd:.2g} per decade of steps ({last}: {number(m.level)})"
    paper = "" if m.paper is None else f" vs {number(m.paper)}" + (f" ± {number(m.spread)}" if m.spread else "")
    z = "" if math.isnan(m.z) or not with_z else f" (z = {m.z:+.2f})"
    return f"{m.label}: {ours}{paper}{z}"


def describe_quantity(claim: Claim) -> str:
    q = claim.quantity
    if claim.kind == "scaling":
        return f"{q.column} ± se"
    if claim.check == "decays":
        return f"{q.name()}" + (f" ({q.test_set})" if q.test_set else "") + ", over the last decade of steps"
    versus = f", minus the same seed's of {claim.versus}" if claim.versus else ""
    if claim.check in SLOPE_CHECKS:
        where = f" ({q.test_set})" if q.test_set else ""
        return f"{q.name()}{where}: change per decade of steps, over the last decade{versus}"
    return q.describe() + versus


def shows_z(points: list[Measured], claim: Claim) -> bool:
    """Whether the row's z is a z (docs/claims.md): not for a fall (decays) or a slope (its sign is read), nor for a
    bound (below, above) whose spread is the sd of seeds that share ``W0`` alone (no test set's error)."""
    if claim.check in ("decays", *SLOPE_CHECKS):
        return False
    return claim.check not in ("below", "above") or any(m.test_se > 0 for m in points)


def score(claim: Claim, table: pd.DataFrame | None) -> dict[str, Any]:
    """The scorecard's row of one claim."""
    found, missing = measure(table, claim)
    row: dict[str, Any] = {
        "claim": claim.id,
        "source": claim.source,
        "figure": claim.figure,
        "experiment": claim.experiment,
        "check": claim.check,
        "quantity": describe_quantity(claim),
        "paper": claim.paper,
        "points": len(found) + len(missing),
        "points_run": len(found),
        "reason": claim.reason,
        "post_hoc": claim.post_hoc,
        "untested": claim.untested,
        "chance": is_chance_test(found, claim),
        "paper_test_size": claim.paper_test_size,
        "paper_test_sizes": ", ".join(map(str, claim.paper_test_sizes)),
        "note": claim.note,
    }
    if not found:
        return row | {"verdict": "not run", "detail": "not in this run: " + ", ".join(missing)}
    sizes = verdicts_at_test_sizes([replace(m) for m in found], claim)
    row |= judge(found, claim)
    row["why"] = why_differs(row["verdict"], claim, row.get("statistic", math.nan), row.get("dof"))
    if len(set(sizes.values())) > 1:
        row["test_sizes"] = ", ".join(f"{v} at {size}" for size, v in sizes.items())
    worst = shown(found, claim.check)
    if worst is not None:
        row |= {
            "paper_value": worst.paper,
            "paper_spread": worst.spread if claim.check == "equal" else None,
            "ours_mean": worst.mean,
            "ours_sd": worst.sd,
            "test_se": worst.test_se,
            "paper_se": worst.paper_se,
            "z": worst.z if shows_z(found, claim) else math.nan,
        }
    row["n"] = min(m.n for m in found)
    with_z = shows_z(found, claim)  # a point's z is shown where the row's is
    detail = "; ".join(describe_point(m, claim.check, claim.versus, with_z) for m in found)
    row["detail"] = detail + ("; not in this run: " + ", ".join(missing) if missing else "")
    return row


def scorecard(claims: Sequence[Claim], tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per claim, in the order of ``claims``; experiments missing from ``tables`` are not run."""
    rows = [score(c, tables.get(c.experiment)) for c in claims]
    out = pd.DataFrame(rows).reindex(columns=list(COLUMNS))
    for column in (
        "paper_value",
        "paper_spread",
        "ours_mean",
        "ours_sd",
        "test_se",
        "paper_se",
        "z",
        "statistic",
        "limit",
    ):
        out[column] = pd.to_numeric(out[column], errors="coerce").astype("float64")
    for column in ("figure", "points", "points_run", "paper_test_size"):
        out[column] = out[column].astype("int64")
    for column in ("n", "dof"):
        out[column] = out[column].astype("Int64")  # none where no point ran, or the check has no statistic
    for column in ("reading", "why", "reason", "post_hoc", "test_sizes", "paper_test_sizes", "untested"):
        out[column] = out[column].astype("object").where(out[column].notna(), "")
    out["chance"] = out["chance"].astype("bool")
    for column in (
        "claim",
        "source",
        "experiment",
        "check",
        "quantity",
        "paper",
        "verdict",
        "reading",
        "why",
        "reason",
        "post_hoc",
        "test_sizes",
        "paper_test_sizes",
        "untested",
        "detail",
        "note",
    ):
        out[column] = out[column].astype("string")
    return out


# --- the Markdown page ----------------------------------------------------------------------------------------


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


def anchor_link(anchor: str) -> str:
    return f"[reason]({REASONS}#{anchor})"


def verdict_cell(row: pd.Series) -> str:
    """The verdict and its reading; a *differs* says whether it is explained (the reason's link), marginal or not
    explained; a part of the sentence the check does not test; the verdicts at other assumed test sizes."""
    text = str(row["verdict"]) + (f": {row['reading']}" if row["reading"] else "") + partly_run(row)
    if row["why"] == "explained":
        text += f" (explained: {anchor_link(str(row['reason']))})"
    elif row["why"] == "marginal":
        text += f" (marginal: χ² within its {100 * MARGINAL_LEVEL:.2f}% limit)"
    elif row["why"]:
        text += f" ({row['why']})"
    if row["untested"] and row["verdict"] != "not run":
        text += f"; not tested: {row['untested']} (note)"
    if row["test_sizes"]:
        text += f"; by the paper's assumed test size: {row['test_sizes']} prompts"
    return text


def claim_cell(row: pd.Series) -> str:
    return str(row["claim"]) + (" (post-hoc)" if row["post_hoc"] else "")


def scale_lines(tables: dict[str, pd.DataFrame]) -> list[str]:
    """What this run measured: steps and seeds of every training table, prompts of every scaling table."""
    parts = []
    for name, table in tables.items():
        if "step" in table:
            parts.append(f"{name}: {int(table['step'].max())} steps × {table['seed'].nunique()} seeds")
        elif "prompts" in table:
            parts.append(f"{name}: {int(table['prompts'].min())}–{int(table['prompts'].max())} prompts a point")
    return [f"This run: {'; '.join(parts)}.", ""] if parts else []


def tally(card: pd.DataFrame) -> str:
    counts = card["verdict"].value_counts()
    return ", ".join(f"{v} {int(counts.get(v, 0))}" for v in VERDICTS)


def chance_line(card: pd.DataFrame) -> str:
    """The chance paragraph: the count, then which rows it counts and which post-hoc rows it leaves out."""
    m, expected, differs, p = expected_by_chance(card)
    counted = card[card["chance"] & (card["verdict"] != "not run")]["claim"]
    post_hoc = card[card["post_hoc"] != ""]["claim"]
    left_out = f" Post-hoc rows, not counted: {', '.join(post_hoc)}." if len(post_hoc) else ""
    if not m:
        return "No row is a level test with a spread in this run." + left_out
    observed = (
        "none does."
        if not differs
        else (f"{differs} do; the probability of {differs} or more by chance alone is {p:.2g}.")
    )
    return (
        f"Chance: {m} of these rows are tests at the {100 * LEVEL:.2f}% level; if every claim they test were true, "
        f"chance alone would make {expected:.2f} of them read *differs* on average "
        f"(m × {100 * (1 - LEVEL):.2f}%); {observed} Counted: the level tests (checks equal and constant) with a "
        f"spread on our side at one point at least, not post-hoc: {', '.join(counted)}. The other rows cannot "
        "read *differs* by chance at that rate (one-sided checks, slopes, orderings, values with no spread)." + left_out
    )


def post_hoc_note(row: pd.Series) -> str:
    return f"Post-hoc: {row['post_hoc']}" if row["post_hoc"] else ""


INTRODUCTION = (
    "Each claim of the multiclass paper's section 5 (workflow/claims.yaml), its value, ours (mean ± sd over n "
    "seeds; for the scaling identity the estimate ± its standard error over n prompts), the difference z in "
    "units of the combined spread (docs/claims.md: ours, the test set's sampling error, the paper's ±, the "
    "paper's sampling error at the test size assumed for it, half its printed precision), and the verdict by the "
    "rule of docs/claims.md. A slope row (change per decade of steps) shows the slope ± sd over seeds and no z: "
    "its sign is read by the rule's sign rule. Where a claim covers several points, the row shows the one farthest "
    "from agreeing "
    "and the test is χ² over all of them; every point is listed below. Our own rows (questions of this project, "
    "not the paper's) follow, scored by the same rule."
)

HEADER = ["claim", "fig.", "the paper says", "quantity", "paper", "ours", "z", "test", "verdict"]


def scorecard_table(card: pd.DataFrame, header: list[str]) -> str:
    body = [
        [
            claim_cell(r),
            str(r["figure"]) if r["figure"] else "–",
            cell(r["paper"]),
            cell(f"{r['experiment']}: {r['quantity']}"),
            paper_cell(r),
            ours_cell(r),
            "–" if pd.isna(r["z"]) else f"{r['z']:+.2f}",
            test_cell(r),
            verdict_cell(r),
        ]
        for _, r in card.iterrows()
    ]
    return markdown_table(header, body)


def with_defaults(card: pd.DataFrame) -> pd.DataFrame:
    """``card`` with the columns a scorecard written before them lacks (``LATER_COLUMNS``), at their defaults."""
    out = card.copy()
    for column, default in LATER_COLUMNS.items():
        if column not in out:
            out[column] = default
        elif isinstance(default, str):
            out[column] = out[column].astype("object").where(out[column].notna(), default)
        else:
            out[column] = out[column].astype("object").where(out[column].notna(), default).astype(type(default))
    return out


def assumptions(card: pd.DataFrame) -> list[str]:
    """The paragraph above the rows: the test size assumed for the paper and the other sizes its verdicts are
    recomputed at, and the correlation taken for points on one test set."""
    sizes = sorted({int(n) for n in card["paper_test_size"] if n})
    ranges = sorted({int(n) for text in card["paper_test_sizes"] for n in str(text).split(", ") if n})
    text = ""
    if sizes:
        text = (
            f"The paper's sampling error assumes a test size of {', '.join(map(str, sizes))} prompts (the paper "
            "states none; workflow/claims.yaml, `paper_test_size`)"
        )
        text += (
            f"; a row whose verdict changes when {' or '.join(map(str, ranges))} prompts are assumed instead says so."
            if ranges
            else "."
        )
    text += (
        " Points scored on one test set are taken as fully correlated (docs/claims.md): against independence this "
        "lowers χ² where their differences have one sign and raises it where they have opposite signs, so the "
        "assumption can push χ² either way."
    )
    return [text.strip(), ""]


def to_markdown(card: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> str:
    card = with_defaults(card)
    papers = card[card["source"] != "ours"]
    ours = card[card["source"] == "ours"]
    lines = [
        "# The paper's claims against this run",
        "",
        INTRODUCTION,
        "",
        *scale_lines(tables),
        f"Verdicts on the paper's claims: {tally(papers)}.",
        "",
        chance_line(papers),
        "",
    ]
    if len(ours):
        lines += [f"Our own rows: {tally(ours)}. {chance_line(ours)}", ""]
    lines += ["## Scorecard", "", *assumptions(card), scorecard_table(papers, HEADER), ""]
    if len(ours):
        header = ["row", "fig.", "the question", *HEADER[3:5], *HEADER[5:]]
        header[4] = "hypothesis"
        lines += ["## Our own rows", "", scorecard_table(ours, header), ""]
    lines += ["## Every point", ""]
    body = [[str(r["claim"]), cell(part.strip())] for _, r in card.iterrows() for part in str(r["detail"]).split("; ")]
    lines += [markdown_table(["claim", "point: ours vs the paper's (z)"], body), ""]
    notes = [
        [claim_cell(r), cell(" ".join(x for x in (str(r["note"] or ""), post_hoc_note(r)) if x))]
        for _, r in card.iterrows()
        if (not pd.isna(r["note"]) and r["note"]) or r["post_hoc"]
    ]
    if notes:
        lines += ["## What is compared", "", markdown_table(["claim", "note"], notes), ""]
    return "\n".join(lines)
