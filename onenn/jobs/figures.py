"""The figure job: an experiment's table drawn, saved as PNG and PDF."""

from collections.abc import Sequence
from logging import Logger
from pathlib import Path

from onenn.base.io import write_with
from onenn.jobs.inputs import load_checked_table


def figure_job(
    figure: str, table_path: str, style: dict, outputs: Sequence[str], *, group_by: Sequence[str], log: Logger
) -> None:
    """Draw ``figure`` of a table, grouped by ``group_by``, in the style's seaborn context, into each of ``outputs``."""
    import matplotlib

    matplotlib.use("Agg")  # the job chooses the backend (files, no screen); the library leaves it to its user
    import matplotlib.pyplot as plt
    import seaborn as sns

    from onenn.analysis.drawing import PlotStyle, metadata
    from onenn.analysis.plots import figure as draw

    style = PlotStyle(**style)
    fig = draw(figure, load_checked_table(table_path), style, group_by)
    try:  # saved in the style it is drawn in: a 3D axis (landscape) reads it when drawn
        # a fixed salt: an SVG's element ids are otherwise random
        with sns.plotting_context(style.context), sns.axes_style("whitegrid"), plt.rc_context({"svg.hashsalt": figure}):
            for path in outputs:
                fmt = Path(path).suffix.lstrip(".")
                kwargs = {"format": fmt, "dpi": style.dpi, "metadata": metadata(fmt, figure, fig, group_by)}
                write_with(path, lambda tmp, kwargs=kwargs: fig.savefig(tmp, **kwargs))
    finally:
        plt.close(fig)
    log.info("drew %s into %s", figure, ", ".join(map(str, outputs)))
