"""Seaborn figures, one function per experiment. They only draw: the statistics come from ``onenn.tables``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from onenn.io import write_with  # noqa: E402
from onenn.tables import seed_stats  # noqa: E402


@dataclass(frozen=True)
class PlotStyle:
    """Plot settings from the config's ``plots`` section."""

    band_sd: float = 2.0
    context: str = "paper"
    palette: str = "viridis"
    width: float = 10.0
    height: float = 4.0
    dpi: int = 150


def band_lines(ax: plt.Axes, stats: pd.DataFrame, hue: str, palette: str) -> None:
    """Mean against step, one line per ``hue`` value, with the ``lower``–``upper`` band."""
    levels = sorted(stats[hue].unique())
    colours = dict(zip(levels, sns.color_palette(palette, len(levels))))
    sns.lineplot(data=stats, x="step", y="mean", hue=hue, palette=colours, ax=ax, errorbar=None)
    for level, part in stats.groupby(hue):
        ax.fill_between(part["step"], part["lower"], part["upper"], color=colours[level], alpha=0.2, lw=0)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("SGD step")


def convergence(table: pd.DataFrame, style: PlotStyle) -> plt.Figure:
    """Training loss (the loss on the uniform test set) and separated-test argmax accuracy against step,
    one line per N, mean ± band_sd sd over seeds."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(style.width, style.height))
    loss = seed_stats(table[table["test_set"] == "uniform"], ["N", "step"], "test_loss", style.band_sd)
    band_lines(left, loss, "N", style.palette)
    left.set_yscale("log")
    left.set_ylabel("training loss (uniform test set)")
    acc = seed_stats(table[table["test_set"] == "separated"], ["N", "step"], "accuracy", style.band_sd)
    band_lines(right, acc, "N", style.palette)
    right.set_ylabel("argmax accuracy (separated test set)")
    right.set_ylim(0, 1.02)
    return fig


FIGURES: dict[str, Callable[[pd.DataFrame, PlotStyle], plt.Figure]] = {"convergence": convergence}


def render(name: str, table: pd.DataFrame, style: PlotStyle, outputs: list[str | Path]) -> None:
    """Draw figure ``name`` and save it (atomically) to every path in ``outputs`` (PNG, PDF, ...)."""
    if name not in FIGURES:
        raise ValueError(f"figure must be one of {', '.join(sorted(FIGURES))}; got {name!r}")
    with sns.plotting_context(style.context), sns.axes_style("whitegrid"):
        fig = FIGURES[name](table, style)
        fig.tight_layout()
        for path in outputs:
            fmt = Path(path).suffix.lstrip(".")
            write_with(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=style.dpi))
    plt.close(fig)
