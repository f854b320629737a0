"""The README's files (``results/readme/``, committed from a full run): the scorecard, the audit's pages and figures,
each opening with the run that made it, no date (the same inputs give the same bytes)."""

import shutil
from logging import Logger
from pathlib import Path

from onenn.base import provenance
from onenn.base.io import verify_checksum, write_with
from onenn.jobs.inputs import ANY, NUMBER, load_checked_table

#: the command that writes these files, named in their header
COMMAND = "snakemake --cores all readme"
#: the command that writes one audit page
PAGE_COMMAND = "snakemake results/readme/<experiment>_{}.md"
#: the headline table's columns the audit's page and the header read
SUMMARY_COLUMNS = {name: ANY for name in ("experiment", "kind", "variant", "quantity", "mean", *provenance.KEYS)}


def write_page(path: str, page: str, configs: str, command: str, made_with: str = "", also: str = "") -> None:
    """Write ``page`` under a header naming the run (its configuration files) and the command that writes it."""
    top = (
        f"> From the run of {configs}{made_with}. Written by `{command}` "
        f"(workflow/rules/readme.smk{also}): rerun it rather than edit this file.\n\n"
    )
    write_with(path, lambda tmp: tmp.write_text(top + page, encoding="utf-8"))


def readme_job(
    claims_table: str,
    tables: dict[str, str],
    summary_table: str,
    configs: str,
    *,
    claims_path: str,
    audit_path: str,
    log: Logger,
) -> None:
    """Write the scorecard (``claims_table``, with the ``tables`` the claims read) and the audit's headline section,
    each under the header naming the run (``configs``) and the headline table's software."""
    from onenn.analysis.audit_pages import audit_page
    from onenn.analysis.scorecard import COLUMNS, tally
    from onenn.analysis.scorecard import to_markdown as claims_markdown

    summary = load_checked_table(summary_table, SUMMARY_COLUMNS)
    if not len(summary):
        raise ValueError(f"{summary_table} has no rows: the headline table of a finished run has one per quantity")
    software = {key: str(summary[key].iloc[0]) for key in provenance.KEYS}
    software |= {k: provenance.gpus_used(summary[k]) for k in provenance.ACCELERATOR_KEYS if k in summary.columns}
    card = load_checked_table(claims_table, {name: ANY for name in COLUMNS})
    read = {name: load_checked_table(path) for name, path in tables.items()}
    made_with = f", made with {provenance.describe(software)}"
    for path, page in {claims_path: claims_markdown(card, read), audit_path: audit_page(summary)}.items():
        write_page(path, page, configs, COMMAND, made_with)
    log.info("wrote %s (%s) and %s, from the run of %s", claims_path, tally(card), audit_path, configs)


def readme_figure_job(figure_path: str, copy_path: str, *, log: Logger) -> None:
    """Copy an experiment's figure (checked against its checksum) into ``results/readme/``."""
    verify_checksum(figure_path)
    write_with(copy_path, lambda tmp: shutil.copyfile(figure_path, tmp))
    log.info("copied %s to %s", figure_path, copy_path)


def resolution_job(table_path: str, configs: str, output: str, *, log: Logger) -> None:
    """An audit experiment's resolution test (``analysis.audit_pages.resolution_page``) as Markdown."""
    from onenn.analysis.audit_pages import resolution_page, sample_agreement
    from onenn.analysis.tables import audit_resolution

    table = load_checked_table(table_path)
    res = audit_resolution(table)
    if not len(res):
        raise ValueError(f"{table_path} has no population flow (source 'population'): is it an audit table?")
    write_page(output, resolution_page(res) + sample_agreement(table), configs, PAGE_COMMAND.format("resolution"))
    log.info("wrote %s (%d rows)", output, len(res))


def lemmas_job(
    table_path: str, settings: dict[str, dict], configs: str, page_path: str, figure_path: str, *, log: Logger
) -> None:
    """The convergence proof's inequalities along an audit experiment's trajectories (its variants' audit
    ``settings``): the page and the figure of each inequality's two sides at Lemma 12's threshold."""
    import matplotlib

    matplotlib.use("Agg")  # as the figure job: the job chooses the backend, the library does not
    import matplotlib.pyplot as plt

    from onenn.analysis.inequalities_page import figure, figure_variant, first_in_region, page
    from onenn.theory.inequalities import inequalities_table

    steps = inequalities_table(load_checked_table(table_path), settings)
    also = "; the target `readme` makes it too"
    write_page(page_path, page(steps, Path(figure_path).name), configs, PAGE_COMMAND.format("lemmas"), also=also)
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


#: the audit table's columns the late-time job reads
LATE_COLUMNS = {"variant": ANY, "source": ANY} | dict.fromkeys(("time", "xi1", "xi2", "reduced_loss", "N", "d"), NUMBER)


def late_time_job(table_path: str, configs: str, output: str, *, log: Logger) -> None:
    """An audit experiment's late-time page (``theory.reduced.late_time.late_time_law``, docs/method.md §7.3)."""
    from onenn.analysis.audit_pages import late_time_page
    from onenn.theory.reduced.late_time import COMPARE_FROM, asymptote, late_time_law

    table = load_checked_table(table_path, LATE_COLUMNS)
    population = table[table["source"] == "population"]
    if not len(population):
        raise ValueError(f"{table_path} has no population flow (source 'population'): is it an audit table?")
    N, d = int(population["N"].iloc[0]), int(population["d"].iloc[0])
    law = late_time_law(population, N, d)
    page = late_time_page(law, N, d, asymptote(N, d), COMPARE_FROM)
    write_page(output, page, configs, PAGE_COMMAND.format("late_time"))
    for variant, (end, comp, _) in law.items():
        changes = "none (ends before the comparison)"
        if comp is not None:
            changes = {q: comp[f"{q}_change"].max() for q in ("xi1", "xi_ratio", "loss_xi1")}
        log.info("%s: the population flow ends at t=%g; largest relative differences: %s", variant, end, changes)
    log.info("wrote %s", output)
