"""The scorecard (docs/claims.md): each claim of ``workflow/claims.yaml`` measured at its points in this run's
tables, judged (``onenn.analysis.verdict``), written as a row (``scorecard``) and a page (``to_markdown``). No torch."""

from collections.abc import Sequence
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
    describe_quantity,
    expected_by_chance,
    is_level,
    judge,
    metric_bound,
    sampling_error,
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


def prefactor(K: int | pd.Series) -> float | pd.Series:
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
    baseline = None if point.baseline is None else float(point.baseline)
    return {"paper": None if value is None else float(value), "spread": point.spread, "baseline": baseline}


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
        rescaled_time = float((ends["step"] * prefactor(ends["K"])).min()) if len(ends) else None
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


def score(claim: Claim, table: pd.DataFrame | None) -> dict[str, Any]:
    """The scorecard's row of one claim."""
    found, missing = measure(table, claim)
    copied = ("source", "figure", "experiment", "check", "paper", "reason", "post_hoc", "untested", "paper_test_size")
    row: dict[str, Any] = {k: getattr(claim, k) for k in (*copied, "note")} | {
        "claim": claim.id,
        "quantity": describe_quantity(claim),
        "points": len(found) + len(missing),
        "points_run": len(found),
        "chance": False,
        "paper_test_sizes": ", ".join(map(str, claim.paper_test_sizes)),
    }
    row |= dict.fromkeys(("reading", "why", "test_sizes"), "")
    if not found:
        return row | {"verdict": "not run", "detail": "not in this run: " + ", ".join(missing)}
    row |= judge(found, claim)
    row["detail"] += ("; not in this run: " + ", ".join(missing)) if missing else ""
    return row


def scorecard(claims: Sequence[Claim], tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per claim, in the order of ``claims``; experiments missing from ``tables`` are not run."""
    out = pd.DataFrame([score(c, tables.get(c.experiment)) for c in claims]).reindex(columns=list(COLUMNS))
    return out.astype(dict.fromkeys(COLUMNS, "string") | TYPES)


#: where the reasons of docs/claims.md are, from the page (results/tables/ or results/readme/)
REASONS = "../../docs/claims.md"


def verdict_cell(row: pd.Series) -> str:
    """The verdict, its reading, why a *differs* (docs/claims.md), what is untested, the other test sizes."""
    text = str(row["verdict"]) + (f": {row['reading']}" if row["reading"] else "")
    if row["verdict"] != "not run" and row["points_run"] != row["points"]:
        text += f" ({row['points_run']} of {row['points']} points run)"
    why = {
        "explained": f"explained: [reason]({REASONS}#{row['reason']})",
        "marginal": f"marginal: χ² within its {100 * MARGINAL_LEVEL:.2f}% limit",
    }.get(row["why"], row["why"])
    text += f" ({why})" if why else ""
    if row["untested"] and row["verdict"] != "not run":
        text += f"; not tested: {row['untested']} (note)"
    if row["test_sizes"]:
        text += f"; by the paper's assumed test size: {row['test_sizes']} prompts"
    return text


def claim_cell(row: pd.Series) -> str:
    return str(row["claim"]) + (" (post-hoc)" if row["post_hoc"] else "")


def scale_lines(tables: dict[str, pd.DataFrame]) -> list[str]:
    """What this run measured: steps × seeds of every training table, prompts of every scaling table."""
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
    """The chance paragraph: the count, the rows it counts and the post-hoc rows it leaves out."""
    m, expected, differs, p = expected_by_chance(card)
    counted = card[card["chance"] & (card["verdict"] != "not run")]["claim"]
    post_hoc = card[card["post_hoc"] != ""]["claim"]
    left_out = f" Post-hoc rows, not counted: {', '.join(post_hoc)}." if len(post_hoc) else ""
    if not m:
        return "No row is a level test with a spread in this run." + left_out
    chance = f"the probability of {differs} or more by chance alone is {p:.2g}"
    observed = f"{differs} do; {chance}." if differs else "none does."
    return (
        f"Chance: {m} of these rows are tests at the {100 * LEVEL:.2f}% level; if every claim they test were true, "
        f"chance alone would make {expected:.2f} of them fail on average "
        f"(m × {100 * (1 - LEVEL):.2f}%); {observed} Counted: the level tests (checks equal and constant) with a "
        f"spread on our side at one point at least, not post-hoc: {', '.join(counted)}. The other rows cannot "
        "fail by chance at that rate (one-sided checks, slopes, orderings, values with no spread)." + left_out
    )


INTRODUCTION = (
    "Each claim of the multiclass paper's section 5 (workflow/claims.yaml), its value, ours (mean ± sd over n seeds; "
    "for the scaling identity the estimate ± its standard error over n prompts), the difference z in units of the "
    "combined spread (docs/claims.md: ours, the test set's sampling error, the paper's ±, the paper's sampling error "
    "at the test size assumed for it, half its printed precision), and the verdict by the rule of docs/claims.md. A "
    "slope row (change per decade of steps) shows the slope ± sd over seeds and no z: its sign is read by the rule's "
    "sign rule. Where a claim covers several points, the row shows the one farthest from agreeing (by its z where the "
    "row shows one, else by how far it misses the rule's margin in the quantity's own units) and the test is χ² "
    "over all of them; every point is listed below. Our own rows (questions of this project, not the paper's) follow, "
    "scored by the same rule."
)

HEADER = ["claim", "fig.", "the paper says", "quantity", "paper", "ours", "z", "test", "verdict"]


def scorecard_table(card: pd.DataFrame, header: list[str]) -> str:
    """The rows; a test is the χ² of checks equal and constant against its limit (one point: χ² = z², limit 4)."""
    body = []
    for _, r in card.iterrows():
        spread = f" ± {number(r['paper_spread'])}" if r["paper_spread"] and not pd.isna(r["paper_spread"]) else ""
        test = f"χ²({r['dof']}) = {r['statistic']:.3g}, limit {r['limit']:.3g}"
        cells = [
            claim_cell(r),
            str(r["figure"]) if r["figure"] else "–",
            cell(r["paper"]),
            cell(f"{r['experiment']}: {r['quantity']}"),
            "–" if pd.isna(r["paper_value"]) else number(r["paper_value"]) + spread,
            "–" if pd.isna(r["ours_mean"]) else f"{number(r['ours_mean'])} ± {r['ours_sd']:.2g} (n = {r['n']})",
            "–" if pd.isna(r["z"]) else f"{r['z']:+.2f}",
            "–" if pd.isna(r["statistic"]) or pd.isna(r["dof"]) else test,
            verdict_cell(r),
        ]
        body.append(cells)
    return markdown_table(header, body)


def assumptions(card: pd.DataFrame) -> list[str]:
    """The paragraph above the rows: the paper's assumed test sizes and the correlation of points on one test set."""
    sizes = sorted({int(n) for n in card["paper_test_size"] if n})
    ranges = " or ".join(sorted({n for text in card["paper_test_sizes"] for n in str(text).split(", ") if n}, key=int))
    text = ""
    if sizes:
        text = (
            f"The paper's sampling error assumes a test size of {', '.join(map(str, sizes))} prompts (the paper "
            "states none; workflow/claims.yaml, `paper_test_size`)"
        )
        text += f"; a row whose verdict changes when {ranges} prompts are assumed instead says so. " if ranges else ". "
    text += (
        "Points scored on one test set are taken as fully correlated (docs/claims.md): against independence this "
        "lowers χ² where their differences have one sign and raises it where they have opposite signs, so the "
        "assumption can push χ² either way."
    )
    return [text, ""]


def to_markdown(card: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> str:
    papers = card[card["source"] != "ours"]
    ours = card[card["source"] == "ours"]
    lines = [
        "# The paper's claims against this run",
        "",
        f"Verdicts on the paper's claims: {tally(papers)}.",
        "",
        chance_line(papers),
        "",
        *([f"Our own rows: {tally(ours)}. {chance_line(ours)}", ""] if len(ours) else []),
        *scale_lines(tables),
        INTRODUCTION,
        "",
    ]
    lines += ["## Scorecard", "", *assumptions(card), scorecard_table(papers, HEADER), ""]
    if len(ours):
        header = ["row", "fig.", "the question", HEADER[3], "hypothesis", *HEADER[5:]]
        lines += ["## Our own rows", "", scorecard_table(ours, header), ""]
    body = [[str(r["claim"]), cell(part.strip())] for _, r in card.iterrows() for part in str(r["detail"]).split("; ")]
    lines += ["## Every point", "", markdown_table(["claim", "point: ours vs the paper's (z)"], body), ""]
    notes = [
        [
            claim_cell(r),
            cell(" ".join(x for x in (str(r["note"] or ""), r["post_hoc"] and f"Post-hoc: {r['post_hoc']}") if x)),
        ]
        for _, r in card.iterrows()
        if (not pd.isna(r["note"]) and r["note"]) or r["post_hoc"]
    ]
    if notes:
        lines += ["## What is compared", "", markdown_table(["claim", "note"], notes), ""]
    return "\n".join(lines)
