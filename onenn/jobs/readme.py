"""The README's files (``results/readme/``, committed from a full run): the scorecard, the audit's table and the
figures the README and the docs show. Each Markdown file opens with the run that made it: its configuration
files and the software the headline table records; no date, so the same inputs give the same bytes."""

from __future__ import annotations

import logging
import shutil

from onenn.base import provenance
from onenn.base.io import verify_checksum, write_with
from onenn.jobs.inputs import ANY, load_checked_table

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
    from onenn.analysis.claims import COLUMNS, VERDICTS
    from onenn.analysis.claims import to_markdown as claims_markdown
    from onenn.analysis.summary import audit_page

    summary = load_checked_table(summary_table, SUMMARY_COLUMNS)
    if not len(summary):
        raise ValueError(f"{summary_table} has no rows: the headline table of a finished run has one per quantity")
    top = header(configs, {key: str(summary[key].iloc[0]) for key in provenance.KEYS})
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
