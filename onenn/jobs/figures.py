"""The figure job: an experiment's table drawn, saved as PNG and PDF."""

from __future__ import annotations

from collections.abc import Sequence
from logging import Logger
from pathlib import Path

from onenn.base.io import write_with
from onenn.jobs.inputs import load_checked_table


def figure_job(
    figure: str, table_path: str, style: dict, outputs: Sequence[str], *, group_by: Sequence[str], log: Logger
) -> None:
    """Draw figure ``figure`` of an experiment's table, grouped by ``group_by``, into every path of ``outputs``."""
    from onenn.analysis.drawing import PlotStyle, metadata
    from onenn.analysis.plots import draw

    table = load_checked_table(table_path)
    style = PlotStyle(**style)
    with draw(figure, table, style, group_by) as fig:
        for path in outputs:
            fmt = Path(path).suffix.lstrip(".")
            meta = metadata(fmt, figure, fig, group_by)
            write_with(path, lambda tmp, fmt=fmt, meta=meta: fig.savefig(tmp, format=fmt, dpi=style.dpi, metadata=meta))
    log.info("drew %s into %s", figure, ", ".join(map(str, outputs)))
