"""The table job: an experiment's table, its runs' or variants' tables concatenated, or computed from its settings."""

import time
from collections.abc import Sequence
from logging import Logger
from typing import Any

from onenn.base.io import save_table
from onenn.jobs.columns import LANDSCAPE_SETTING_COLUMNS, descriptions, kind_function, save_kind_table, table_columns
from onenn.jobs.inputs import load_checked_table
from onenn.plan.kinds import kind_named


def scaling_job(settings: dict[str, Any], *, experiment: str, output: str, log: Logger) -> None:
    """A ``kind: scaling`` experiment: estimate every point, write one table."""
    from onenn.theory.scaling import scaling_table

    table = scaling_table(settings, experiment)
    save_kind_table("scaling", table, output, {})
    message = "%s xi=(%g, %g) K=%d prompts=%d: ratio %.4f [%.4f, %.4f], (K-1)/K = %.4f"
    columns = ["panel", "xi1", "xi2", "K", "prompts", "ratio", "ratio_lower", "ratio_upper", "reference"]
    for row in table[columns].itertuples(index=False):
        log.info(message, *row)


def landscape_job(settings: dict, *, experiment: str, output: str, log: Logger) -> None:
    """A ``kind: landscape`` experiment: the reduced loss on its grid, with the sample's settings."""
    from onenn.theory.landscape import LandscapeSettings, landscape

    s = LandscapeSettings.from_dict(settings)
    started = time.perf_counter()
    table = landscape(s)
    table.insert(0, "experiment", experiment)
    save_kind_table("landscape", table, output, {key: getattr(s, key) for key in LANDSCAPE_SETTING_COLUMNS})
    log.info("landscape: %d points in %.1f s", len(table), time.perf_counter() - started)


def aggregate_job(paths: Sequence[str], output: str, log: Logger, kind: str) -> None:
    """Concatenate the runs' (or variants') tables of an experiment of ``kind`` into one."""
    from onenn.analysis.tables import concat_tables

    table = concat_tables([load_checked_table(p, table_columns(kind)) for p in paths])  # all checked before any is used
    save_table(output, table, descriptions(kind))
    log.info("aggregated %d runs, %d rows into %s", len(paths), len(table), output)


def table_job(
    kind: str, inputs: Sequence[str], settings: dict[str, Any], *, experiment: str, output: str, log: Logger
) -> None:
    """An experiment's table by its kind's ``table_source``: its runs' or variants' concatenated, or computed."""
    if kind_named(kind).table_source != "settings":
        aggregate_job(inputs, output, log=log, kind=kind)
    else:
        kind_function(kind, "job")(settings, experiment=experiment, output=output, log=log)
