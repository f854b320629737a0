"""The README's files (``results/readme/``, committed from a full run): the scorecard, the audit's table and the
figures the README and the docs show. Each Markdown file opens with the run that made it: its configuration
files and the software the headline table records; no date, so the same inputs give the same bytes."""

from __future__ import annotations

import logging
import math
import shutil
from typing import TYPE_CHECKING

from onenn.base import provenance
from onenn.base.io import verify_checksum, write_with
from onenn.jobs.inputs import ANY, load_checked_table

if TYPE_CHECKING:
    import pandas as pd

#: the command that writes these files, named in their header
COMMAND = "snakemake --cores all readme"
#: the headline table's columns the audit's page and the header read
SUMMARY_COLUMNS = {name: ANY for name in ("experiment", "kind", "variant", "quantity", "mean", *provenance.KEYS)}


def header(configs: str, versions: dict[str, str]) -> str:
    """The first lines of a generated page: the run (its configuration files) and the software that made it."""
    return (
        f"> From the run of {configs}, made with {provenance.describe(versions)}. Written by `{COMMAND}` "
        "(workflow/rules/readme.smk): rerun it rather than edit this file.\n\n"
    )


def readme_job(
    claims_table: str,
    tables: dict[str, str],
    summary_table: str,
    configs: str,
    *,
    claims_path: str,
    audit_path: str,
    log: logging.Logger,
) -> None:
    """Write the scorecard (``claims_table`` rendered as the claims rule renders it, with the experiment
    ``tables`` the claims read) and the audit's section of the headline table, each under the header that
    names the run (``configs``, as ``provenance.config_files`` writes it) and the headline table's software."""
    from onenn.analysis.scorecard import COLUMNS
    from onenn.analysis.scorecard_page import to_markdown as claims_markdown
    from onenn.analysis.summary_page import audit_page
    from onenn.analysis.verdict import VERDICTS

    summary = load_checked_table(summary_table, SUMMARY_COLUMNS)
    if not len(summary):
        raise ValueError(f"{summary_table} has no rows: the headline table of a finished run has one per quantity")
    software = {key: str(summary[key].iloc[0]) for key in provenance.KEYS}
    software |= {k: provenance.gpus_used(summary[k]) for k in provenance.ACCELERATOR_KEYS if k in summary.columns}
    top = header(configs, software)
    card = load_checked_table(claims_table, {name: ANY for name in COLUMNS})
    read = {name: load_checked_table(path) for name, path in tables.items()}
    pages = {claims_path: claims_markdown(card, read), audit_path: audit_page(summary)}
    for path, page in pages.items():
        write_with(path, lambda tmp, text=top + page: tmp.write_text(text, encoding="utf-8"))
    counts = card["verdict"].value_counts()
    log.info(
        "wrote %s (%s) and %s, from the run of %s",
        claims_path,
        ", ".join(f"{v} {int(counts.get(v, 0))}" for v in VERDICTS),
        audit_path,
        configs,
    )


def readme_figure_job(figure_path: str, copy_path: str, *, log: logging.Logger) -> None:
    """Copy an experiment's figure (checked against its checksum) into ``results/readme/``."""
    verify_checksum(figure_path)
    write_with(copy_path, lambda tmp: shutil.copyfile(figure_path, tmp))
    log.info("copied %s to %s", figure_path, copy_path)


#: the tolerance the resolution test is held to at late times: relative change of xi1/xi2 and of the loss between
#: the two finest resolutions
RESOLUTION_TOLERANCE = {"xi_ratio": 1e-3, "reduced_loss": 1e-2}
#: the early times (t <= EARLY_END, where xi1/xi2 crosses 7/15) are held to EARLY_TOLERANCE, relative, in both,
#: between the two finest resolutions and under the seed swap
EARLY_END = 1e6
EARLY_TOLERANCE = {"xi_ratio": 1e-3, "reduced_loss": 1e-3}


def resolution_tolerance(time: float) -> dict[str, float]:
    """The tolerance of the resolution test at ``time``: ``EARLY_TOLERANCE`` up to ``EARLY_END``, then
    ``RESOLUTION_TOLERANCE``."""
    return EARLY_TOLERANCE if time <= EARLY_END else RESOLUTION_TOLERANCE


def resolution_job(table_path: str, configs: str, output: str, *, log: logging.Logger) -> None:
    """Write an audit experiment's resolution test (``tables.audit_resolution``) as Markdown, with the verdict
    of each quantity against ``RESOLUTION_TOLERANCE`` between the two finest resolutions."""
    from onenn.analysis.tables import audit_resolution

    table = load_checked_table(table_path)
    res = audit_resolution(table)
    if not len(res):
        raise ValueError(f"{table_path} has no population flow (source 'population'): is it an audit table?")
    text = (
        f"> From the run of {configs}. Written by `snakemake results/readme/<experiment>_resolution.md` "
        "(workflow/rules/readme.smk): rerun it rather than edit this file.\n\n"
        + resolution_page(res)
        + sample_agreement(table)
    )
    write_with(output, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    log.info("wrote %s (%d rows)", output, len(res))


def resolution_page(res: pd.DataFrame) -> str:
    """The resolution table: one row per (variant, time, resolution), finest first, with the relative change to
    the next finer resolution, then the seed swap's row (all the nodes, other uniforms) with its relative change
    to the main flow; and per (variant, time) whether the two finest and the seed swap agree within
    ``resolution_tolerance(time)`` (the swap only where the table has it at that time)."""
    from onenn.analysis.markdown import markdown_table
    from onenn.analysis.tables import AUDIT_SWAP

    def number(x: float) -> str:
        return "–" if math.isnan(x) else f"{x:.5g}"

    body, verdicts = [], []
    for (variant, time), part in res.groupby(["variant", "time"], sort=True):
        for row in part.itertuples(index=False):
            if row.source == AUDIT_SWAP and math.isnan(row.xi_ratio):
                continue  # beyond the seed swap's end
            label = "all" if row.nodes_divisor == 1 else f"1/{row.nodes_divisor}"
            label = "all, seed swap" if row.source == AUDIT_SWAP else label
            body.append(
                [variant, f"{time:.0e}", label]
                + [number(v) for v in (row.xi_ratio, row.xi_ratio_change, row.reduced_loss, row.reduced_loss_change)]
            )
        levels, swap = part[part["source"] != AUDIT_SWAP], part[part["source"] == AUDIT_SWAP]
        compared = ([levels.iloc[1]] if len(levels) > 1 else []) + [r for _, r in swap.iterrows()]
        compared = [r for r in compared if not math.isnan(r["xi_ratio_change"])]
        if compared:
            tolerance = resolution_tolerance(time)
            ok = all(r[f"{q}_change"] <= tol for r in compared for q, tol in tolerance.items())
            what = " and ".join(
                ["half the nodes"] * (len(levels) > 1)
                + ["the seed swap"] * any(r["source"] == AUDIT_SWAP for r in compared)
            )
            verdicts.append(
                f"{variant} at t = {time:.0e} ({what}): {'within' if ok else 'NOT within'} the tolerance"
                f" ({', '.join(f'{q} {tol:g}' for q, tol in tolerance.items())})"
            )
    header = ["variant", "t", "nodes per variable", "ξ1/ξ2", "rel. change", "loss", "rel. change"]
    early = ", ".join(f"{q} {tol:g}" for q, tol in EARLY_TOLERANCE.items())
    late = ", ".join(f"{q} {tol:g}" for q, tol in RESOLUTION_TOLERANCE.items())
    return "\n".join(
        [
            "# The audit's resolution test",
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
            *[f"- {v}" for v in verdicts],
            "",
        ]
    )


def sample_agreement(table: pd.DataFrame) -> str:
    """Where the weighted sample is valid (its flow, up to its end): the largest gap in ``xi1/xi2`` between it and
    the population flow at the times both record, and the largest gap in loss over the sample's standard error."""
    import numpy as np

    lines = ["", "Against the flow on the weighted sample where it is valid, at the times both record:", ""]
    for variant, mine in table.groupby("variant", sort=True):
        pop = mine[(mine["source"] == "population") & (mine["time"] > 0)].set_index("time")
        sample = mine[mine["source"].isin(["flow", "continuation"]) & (mine["time"] > 0)]
        sample = sample.drop_duplicates("time").set_index("time")
        common = pop.index.intersection(sample.index)
        if not len(common):
            continue
        pop, sample = pop.loc[common], sample.loc[common]
        ratio = pop["xi_ratio"].to_numpy()
        loss = pop["reduced_loss"].to_numpy()
        z = np.abs(loss - sample["reduced_loss"].to_numpy()) / sample["reduced_loss_se"].to_numpy()
        lines.append(
            f"- {variant}, {len(common)} times up to t = {common.max():.0e}: largest |Δ ξ1/ξ2| = "
            f"{np.max(np.abs(ratio - sample['xi_ratio'].to_numpy())):.3g}, largest |Δ loss| = "
            f"{np.max(z):.3g} standard errors of the sample"
        )
    return "\n".join([*lines, ""])


def lemmas_job(
    table_path: str, settings: dict[str, dict], configs: str, page_path: str, figure_path: str, *, log: logging.Logger
) -> None:
    """The convergence proof's inequalities along an audit experiment's trajectories (``theory.proof_steps``, its
    variants' audit ``settings``): the page (``analysis.proof_steps.page``) under the header naming the run, and
    the figure of each inequality's two sides along the flow at Lemma 12's threshold."""
    import matplotlib.pyplot as plt

    from onenn.analysis.proof_steps import figure, figure_variant, first_in_region, page
    from onenn.theory.proof_steps import proof_steps

    table = load_checked_table(table_path)
    steps = proof_steps(table, settings)
    text = (
        f"> From the run of {configs}. Written by `snakemake results/readme/<experiment>_lemmas.md` "
        "(workflow/rules/readme.smk; the target `readme` makes it too): rerun it rather than edit this file.\n\n"
        + page(steps)
    )
    write_with(page_path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    fig = figure(steps)
    try:
        fig.tight_layout()
        meta = {"Title": f"onenn figure: the convergence proof's inequalities, {figure_variant(steps)}"}
        write_with(figure_path, lambda tmp: fig.savefig(tmp, format="png", dpi=150, metadata=meta))
    finally:
        plt.close(fig)
    for variant, mine in steps.groupby("variant", sort=True):
        log.info("%s: first inequality to fail in the proof's region: %s", variant, first_in_region(mine))
    log.info("wrote %s and %s (%d rows)", page_path, figure_path, len(steps))
