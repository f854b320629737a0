"""What the figures of ``onenn.analysis.plots`` draw with: the style, a look per group of variants, the grouping,
bands against step, final values with error bars, the labels of settings."""

import json
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from onenn.analysis.tables import ORDER_KEYS, seed_stats, variant_order


@dataclass(frozen=True)
class PlotStyle:
    """Plot settings from the config's ``plots`` section."""

    band_sd: float = 2.0
    context: str = "paper"
    palette: str = "viridis"
    width: float = 10.0
    height: float = 4.0
    dpi: int = 150


#: the markers of a figure's groups of variants, in turn; the dashes of series of final values; markers along a
#: curve about one per tenth of the axes' diagonal
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h", "*")
DASHES = ("-", "--", ":", "-.")
MARK_EVERY = 0.1
#: how a figure draws one group of variants, in every panel; how it groups an experiment's curves: by the table's
#: ``column``, in ``order``, under ``title``
Look = namedtuple("Look", ["colour", "marker"])
Grouping = namedtuple("Grouping", ["column", "order", "title"])


def looks(levels: Sequence, palette: str | Sequence) -> dict[Any, Look]:
    """One look per level: the colours of ``palette`` (a seaborn name, or colours in the order of ``levels``)."""
    levels = list(levels)
    colours = sns.color_palette(palette, len(levels)) if isinstance(palette, str) else list(palette)
    return {level: Look(colour, MARKERS[i % len(MARKERS)]) for i, (level, colour) in enumerate(zip(levels, colours))}


def point(ax: Axes, x: float, stats: pd.Series, look: Look, filled: bool = True, **kwargs) -> None:
    """One final value (a ``seed_stats`` row) at ``x`` with its error bar, hollow unless ``filled``."""
    mean, lower, upper = (float(stats[k]) for k in ("mean", "lower", "upper"))
    face = look.colour if filled else "white"
    yerr = [[mean - lower], [upper - mean]]
    ax.errorbar([x], [mean], yerr=yerr, capsize=3, fmt=look.marker, color=look.colour, mfc=face, **kwargs)


def fill_key(labels: Sequence[str]) -> list[Line2D]:
    """Grey legend entries for what filled and hollow markers mean."""
    return [
        Line2D([], [], color="grey", marker="o", ls="none", mfc=face, label=label)
        for label, face in zip(labels, ("grey", "white"))
    ]


def grouping(table: pd.DataFrame, group_by: Sequence[str]) -> Grouping:
    """One setting: its column, values sorted; several: one group per variant, sorted by them; none: the variant."""
    missing = [k for k in group_by if k not in table]
    if missing:
        raise ValueError(
            f"cannot group the curves by {', '.join(missing)}: not a column of the table "
            f"(columns: {', '.join(table.columns)})"
        )
    if len(group_by) == 1:
        return Grouping(group_by[0], sorted(table[group_by[0]].unique()), group_by[0])
    return Grouping("variant", variant_order(table, group_by or ORDER_KEYS), ", ".join(group_by) or "variant")


def band_panel(ax: Axes, table: pd.DataFrame, group: Grouping, look_of: Mapping, band_sd: float, panel: tuple) -> None:
    """One panel of curves against step: ``panel`` is (test set, metric, y label, y scale: log, unit or None)."""
    test_set, metric, label, scale = panel
    stats = seed_stats(table[table["test_set"] == test_set], [group.column, "step"], metric, band_sd)
    for level, look in look_of.items():  # mean against step with the lower–upper band, one line per group
        part = stats[stats[group.column] == level].sort_values("step")
        if part.empty:
            continue
        ax.plot(
            part["step"], part["mean"], color=look.colour, marker=look.marker, markevery=MARK_EVERY, label=str(level)
        )
        ax.fill_between(part["step"], part["lower"], part["upper"], color=look.colour, alpha=0.2, lw=0)
    ax.set_xscale("symlog", linthresh=1)
    ax.set(xlabel="SGD step", ylabel=label)
    ax.legend(title=group.title or group.column)
    if scale == "log":
        ax.set_yscale("log")
    elif scale == "unit":
        ax.set_ylim(0, 1.02)


#: symbols of settings in labels (docs/method.md); what a value of ``noise_blocks`` says (``all``: nothing)
SYMBOLS = {"epsilon": "ε", "sigma": "σ", "lr": "η", "delta": "δ*"}
NOISE_BLOCKS = {"all": "", "label": "label columns", "other": "other blocks"}


def setting_label(key: str, value: Any) -> str:
    """One setting as a label: ``ε=0.3``, ``d=4``, ``label columns`` ('' for noise in all blocks)."""
    if key == "noise_blocks":
        return NOISE_BLOCKS.get(str(value), f"noise in {value} blocks")
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{SYMBOLS.get(key, key)}={shown}"


def settings_label(values: Mapping[str, Any], keys: Sequence[str]) -> str:
    parts = [p for p in (setting_label(k, values[k]) for k in keys) if p]
    return ", ".join(parts) or ", ".join(f"{k}={values[k]}" for k in keys)


def is_number(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def final_against(
    ax: Axes,
    final: pd.DataFrame,
    x: str,
    series: Sequence[str],
    level: str,
    look_of: Mapping[Any, Look],
    series_label: Callable[[dict], str | None],
) -> None:
    """Final values (``seed_stats`` rows, looks by ``level``) against the setting ``x``, those of one value of
    ``series`` joined by a grey line; a number ``x`` on a log scale where positive and spanning a factor 4."""
    levels = sorted(final[x].unique())
    numeric = is_number(final[x])
    final = final.assign(position=final[x] if numeric else final[x].map({v: i for i, v in enumerate(levels)}))
    parts = final.groupby(list(series), sort=True) if series else [((), final)]
    for i, (values, part) in enumerate(parts):
        part = part.sort_values("position")
        label = series_label(dict(zip(series, values)))
        if len(part) > 1:
            ax.plot(part["position"], part["mean"], color="grey", lw=1, ls=DASHES[i % len(DASHES)], label=label)
            label = None
        for _, row in part.iterrows():
            point(ax, float(row["position"]), row, look_of[row[level]], label=label)
    if not numeric:
        ax.set_xticks(range(len(levels)), [str(v) for v in levels])
    elif min(levels) > 0 and max(levels) >= 4 * min(levels):
        ax.set_xscale("log")
        ax.set_xticks([float(v) for v in levels], [f"{v:g}" for v in levels])
        ax.minorticks_off()
    ax.set_xlabel(SYMBOLS.get(x, x))


def grouped(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> tuple[Grouping, dict[Any, Look]]:
    group = grouping(table, group_by)
    return group, looks(group.order, style.palette)


def metadata(fmt: str, name: str, fig: Figure, group_by: Sequence[str]) -> dict[str, str] | None:
    """A saved figure's name and grouping and, in a PNG, each legend's title and entries as JSON (chunk ``Legends``)."""
    title = f"onenn figure {name}" + (f", grouped by {', '.join(group_by)}" if group_by else "")
    if fmt != "png":
        # no date: the same table draws the same bytes (a PDF's CreationDate, an SVG's Date)
        return {"Title": title, {"pdf": "CreationDate", "svg": "Date"}[fmt]: None} if fmt in ("pdf", "svg") else None
    found = [legend for legend in (ax.get_legend() for ax in fig.axes) if legend is not None]
    legends = [{"title": x.get_title().get_text(), "entries": [t.get_text() for t in x.get_texts()]} for x in found]
    return {"Title": title, "Legends": json.dumps(legends)}


def plain_log_labels(axis: Axis) -> None:
    """Decimal labels (0.2, not 2×10⁻¹) on a log axis spanning less than two decades; matplotlib still chooses
    which ticks carry one."""
    low, high = sorted(axis.get_view_interval())
    if axis.get_scale() != "log" or low <= 0 or high >= 100 * low:
        return
    for default, use, ticks in (
        (axis.get_major_formatter(), axis.set_major_formatter, axis.get_majorticklocs()),
        (axis.get_minor_formatter(), axis.set_minor_formatter, axis.get_minorticklocs()),
    ):
        default.set_locs(ticks)  # which ticks it labels, for the final view
        use(FuncFormatter(lambda value, at, default=default: f"{value:.3g}" if default(value, at) else ""))
