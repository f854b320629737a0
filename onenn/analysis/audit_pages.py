"""The audit's pages (docs/method.md §7.3): its headline section and page, from the headline table's audit rows; the
resolution test, from ``tables.audit_resolution``; the late-time law, from ``late_time.late_time_law``'s tables."""

import math

import numpy as np
import pandas as pd

from onenn.analysis.markdown import markdown_table, number
from onenn.analysis.summary import AUDIT_COLUMNS, audit_markdown, value_cell
from onenn.analysis.tables import AUDIT_SWAP
from onenn.base.paths import README_EXPERIMENTS


def audit_answer(rows: pd.DataFrame) -> list[str]:
    """The answer of an audit experiment's rows, a line per variant: whether and when ξ1/ξ2 passes 7/15, its peak and
    end, the loss at the end against its limit."""
    values = rows.set_index(["variant", "quantity"])["mean"]
    lines = ["Does ξ1/ξ2 stay at or below 7/15 along the population flow?", ""]
    for v in dict.fromkeys(rows["variant"]):
        get = {q: values.get((v, q), math.nan) for _, q in AUDIT_COLUMNS}
        crossed = f"no: it passes 7/15 at t = {value_cell(values, v, 'time_cross')}"
        if math.isnan(get["time_cross"]):
            crossed = "yes, to the flow's end"
        lines.append(
            f"- {v} (σ = {number(get['sigma'])}): {crossed}; its largest value is {number(get['xi_ratio_max'])}, "
            f"at t = {number(get['time_end'])} (the end) it is {number(get['xi_ratio_end'])}, the loss "
            f"{number(get['reduced_loss_end'])}, loss·ξ1 {number(get['loss_xi1_end'])} (its limit C, closed form: "
            f"{number(get['asymptote'])})."
        )
    return [*lines, ""]


#: the tolerance the resolution test is held to at late times: relative change of xi1/xi2 and of the loss between
#: the two finest resolutions
RESOLUTION_TOLERANCE = {"xi_ratio": 1e-3, "reduced_loss": 1e-2}
#: the early times (t <= EARLY_END, where xi1/xi2 crosses 7/15) are held to EARLY_TOLERANCE, relative, in both,
#: between the two finest resolutions and under the seed swap
EARLY_END = 1e6
EARLY_TOLERANCE = {"xi_ratio": 1e-3, "reduced_loss": 1e-3}


def audit_page(summary: pd.DataFrame) -> str:
    """The audit's section of the headline table as a page of its own: per experiment its answer, its figure where the
    README's files have it, then its tables."""
    audits = summary[summary["kind"] == "audit"]
    if not len(audits):
        kinds = ", ".join(map(str, dict.fromkeys(summary["kind"])))
        raise ValueError(f"the headline table has no experiment of kind 'audit' (its kinds: {kinds or 'none'})")
    lines = ["# The audit of Lemma 12's invariant", ""]
    for name, rows in audits.groupby("experiment", sort=False):
        figure = [f"![{name}: the reduced dynamics]({name}.png)", ""] if name in README_EXPERIMENTS else []
        lines += [f"## {name}", "", *audit_answer(rows), *figure, *audit_markdown(rows)]
    return "\n".join(lines)


def resolution_page(res: pd.DataFrame) -> str:
    """The resolution table (a row per variant, time and resolution, finest first, then the seed swap's), and per
    variant and time whether the two finest and the seed swap agree within the tolerance at that time."""
    early, late = (", ".join(f"{q} {tol:g}" for q, tol in t.items()) for t in (EARLY_TOLERANCE, RESOLUTION_TOLERANCE))
    body, verdicts = [], []
    for (variant, time), part in res.groupby(["variant", "time"], sort=True):
        for row in part.itertuples(index=False):
            if row.source == AUDIT_SWAP and math.isnan(row.xi_ratio):
                continue  # beyond the seed swap's end
            label = "all" if row.nodes_divisor == 1 else f"1/{row.nodes_divisor}"
            label = "all, seed swap" if row.source == AUDIT_SWAP else label
            body.append(
                [variant, f"{time:.0e}", label]
                + [number(v, 5) for v in (row.xi_ratio, row.xi_ratio_change, row.reduced_loss, row.reduced_loss_change)]
            )
        levels, swap = part[part["source"] != AUDIT_SWAP], part[part["source"] == AUDIT_SWAP]
        compared = ([levels.iloc[1]] if len(levels) > 1 else []) + [r for _, r in swap.iterrows()]
        compared = [r for r in compared if not math.isnan(r["xi_ratio_change"])]
        if compared:
            tolerance = EARLY_TOLERANCE if time <= EARLY_END else RESOLUTION_TOLERANCE
            ok = all(r[f"{q}_change"] <= tol for r in compared for q, tol in tolerance.items())
            what = " and ".join(
                ["half the nodes"] * (len(levels) > 1)
                + ["the seed swap"] * any(r["source"] == AUDIT_SWAP for r in compared)
            )
            verdicts.append(
                f"{variant} at t = {time:.0e} ({what}): {'within' if ok else 'NOT within'} the tolerance"
                f" ({early if time <= EARLY_END else late})"
            )
    header = ["variant", "t", "nodes per variable", "ξ1/ξ2", "rel. change", "loss", "rel. change"]
    within = sum("NOT within" not in v for v in verdicts)
    return "\n".join(
        [
            "# The audit's resolution test",
            "",
            f"{within} of {len(verdicts)} comparisons within their tolerance:",
            "",
            *[f"- {v}" for v in verdicts],
            "",
            (
                "The population flow (docs/method.md §7.3) at all its nodes and at 1/2, 1/4, ... of them in each "
                "variable, and at all its nodes with other fixed uniforms for the other N − 3 inner products (the "
                "seed swap, to the weighted sample's end). The relative change is to the next finer resolution, "
                "and for the seed swap to the main flow ('–' beyond a flow's end). Tolerance (relative) between the "
                f"two finest and under the seed swap: {early} up to t = {EARLY_END:.0e}, {late} beyond."
            ),
            "",
            markdown_table(header, body),
            "",
        ]
    )


def sample_agreement(table: pd.DataFrame) -> str:
    """Where the weighted sample is valid (its flow, up to its end): the largest gap in ``xi1/xi2`` between it and
    the population flow at the times both record, and the largest gap in loss over the sample's standard error."""
    lines = ["", "Against the flow on the weighted sample where it is valid, at the times both record:", ""]
    for variant, mine in table.groupby("variant", sort=True):
        pop = mine[(mine["source"] == "population") & (mine["time"] > 0)].set_index("time")
        sample = mine[mine["source"].isin(["flow", "continuation"]) & (mine["time"] > 0)]
        sample = sample.drop_duplicates("time").set_index("time")
        common = pop.index.intersection(sample.index)
        if not len(common):
            continue
        pop, sample = pop.loc[common], sample.loc[common]
        z = (pop["reduced_loss"] - sample["reduced_loss"]).abs() / sample["reduced_loss_se"]
        lines.append(
            f"- {variant}, {len(common)} times up to t = {common.max():.0e}: largest |Δ ξ1/ξ2| = "
            f"{(pop['xi_ratio'] - sample['xi_ratio']).abs().max():.3g}, largest |Δ loss| = "
            f"{z.max():.3g} standard errors of the sample"
        )
    return "\n".join([*lines, ""])


#: the largest relative difference between the two late flows that counts as agreement (xi1, xi1/xi2, loss * xi1)
LATE_TOLERANCE = 1e-3
LAW_NOTE = (
    "`law` is `ξ1³ (d + (1 − r)²) / (3 C t)`, which the late-time law puts at 1 once the boundary follows its "
    "quasi-static value."
)
FAR_HEADER = ["variant", "t", "ξ1/ξ2", "ξ1/ξ2 − ½", "1 + r", "log10 ξ1", "loss·ξ1", "law"]


def answer(far_rows: pd.DataFrame) -> str:
    """Where ``xi1/xi2`` goes, as far as the late flow shows: to 1/2 from above, or not settled."""
    gap = far_rows["xi_ratio_minus_half"].to_numpy()
    last = f"ξ1/ξ2 − ½ = {gap[-1]:.3g} at t = 10^{far_rows['log10_time'].iloc[-1]:.0f}"
    if np.all(gap > 0) and np.all(np.diff(gap) < 0) and gap[-1] < 1e-6:
        return f"ξ1/ξ2 falls to 1/2 from above: it stays above 1/2 and falls at every recorded time ({last})."
    return f"Not settled by the late flow: {last}."


def late_time_page(law: dict, N: int, d: int, C: float, compare_from: float) -> str:
    """The late-time page from ``late_time_law``'s ``{variant: (end, comparison, far)}``: per variant the two flows
    from ``compare_from`` with the verdict against ``LATE_TOLERANCE``, then the late flow alone and the answer."""

    def g(x: float, digits: int = 7) -> str:
        return f"{x:.{digits}g}"

    lines = [
        "# The audit's late-time law",
        "",
        (
            "The late flow (docs/method.md §7.3, `onenn/theory/reduced/late_time.py`) is the gradient flow of "
            "`C/ξ1 + ½F(r)^N`, `r = 1 − ξ2/ξ1`, with "
            f"C = {g(C)} at d = {d}, N = {N}; it leaves out the boundary layer's `−½p(r)/ξ1` (docs/audit.md), which "
            "would lower ξ2's rate by the share `(log p)′(r)/ξ1` given under each comparison, shrinking as ξ1 grows. "
            "From the population flow's point at t = "
            f"{compare_from:.0e} both flows run to the population's end; relative differences, tolerance "
            f"{LATE_TOLERANCE:g}."
        ),
        "",
    ]
    far, verdicts, answers = [], [], []
    for variant, (end, comp, far_rows) in law.items():
        lines += [f"## {variant}: the two flows", ""]
        if comp is None:  # a short run (the quick preset): there is no late flow to hold the law to
            lines += [
                f"The population flow ends at t = {end:.3g}, before t = {compare_from:.0e}: nothing to compare.",
                "",
            ]
            continue
        worst = {q: float(comp[f"{q}_change"].max()) for q in ("xi1", "xi_ratio", "loss_xi1")}
        ok = all(v <= LATE_TOLERANCE for v in worst.values())
        body = [
            [f"{r.time:.3g}", g(r.xi1), g(r.xi1_late), f"{r.xi1_change:.2g}", g(r.xi_ratio), g(r.xi_ratio_late)]
            + [f"{r.xi_ratio_change:.2g}", g(r.loss_xi1, 6), g(r.loss_xi1_late, 6), f"{r.loss_xi1_change:.2g}"]
            for r in comp.itertuples(index=False)
        ]
        header = ["t", "ξ1 (population)", "ξ1 (late)", "rel. diff", "ξ1/ξ2 (population)", "ξ1/ξ2 (late)"]
        header += ["rel. diff", "loss·ξ1 (population)", "loss·ξ1 (late)", "rel. diff"]
        worst_text = ", ".join(f"{q} {v:.2g}" for q, v in worst.items())
        lines += [markdown_table(header, body), ""]
        first, last = comp.iloc[0], comp.iloc[-1]
        verdict = f"relative difference: {worst_text}: {'within' if ok else 'NOT within'} the tolerance."
        layer = f"The boundary layer's share of ξ2's rate: {first['layer_share']:.2g} at t = {first['time']:.3g}, "
        layer += f"{last['layer_share']:.2g} at t = {last['time']:.3g}."
        lines += [f"Largest {verdict} {layer}", ""]
        verdicts.append(
            f"- {variant}: the late flow against the population flow from t = {compare_from:.0e}: largest {verdict}"
        )
        answers.append(f"- {variant}: {answer(far_rows)}")
        body = [
            [variant, f"1e{r.log10_time:.0f}", f"{r.xi_ratio:.10f}", f"{r.xi_ratio_minus_half:.3g}"]
            + [f"{r.one_plus_boundary:.4g}", f"{r.log10_xi1:.4f}", g(r.loss_xi1), f"{r.law:.5f}"]
            for r in far_rows.itertuples(index=False)
        ]
        far += [markdown_table(FAR_HEADER, body), ""]
    if far:
        lines += ["## The late flow alone, from the population flow's end", "", LAW_NOTE, "", *far]
    return "\n".join(lines[:2] + verdicts + answers + [""] + lines[2:])
