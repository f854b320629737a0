"""The scorecard's Markdown page (``to_markdown``): the tally, the chance line, the rows, every point and what each
claim compares, by the rule of docs/claims.md. No torch."""

from __future__ import annotations

import pandas as pd

from onenn.analysis.markdown import cell, markdown_table, number
from onenn.analysis.verdict import LEVEL, MARGINAL_LEVEL, VERDICTS, expected_by_chance

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
