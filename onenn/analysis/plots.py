"""Seaborn figures, one function per figure name of the config. They only draw: the statistics come from
``onenn.analysis.tables``. A figure of a training experiment groups its curves by the settings the experiment's
variants vary, which it receives as ``group_by`` (from the config: ``onenn.plan.experiments.group_by``);
``sweep`` draws any training experiment. A figure draws each group of variants in one look, a colour and a marker
(``looks``), made once per figure and passed to every panel, whatever order a panel sorts by."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from onenn.analysis.tables import (
    audit_trajectory,
    class_scaled,
    final_step,
    first_and_last,
    seed_stats,
    variant_order,
)
from onenn.base.columns import TEST_SETS
from onenn.maths.family import XI_RATIO_BOUND


@dataclass(frozen=True)
class PlotStyle:
    """Plot settings from the config's ``plots`` section."""

    band_sd: float = 2.0
    context: str = "paper"
    palette: str = "viridis"
    width: float = 10.0
    height: float = 4.0
    dpi: int = 150


#: the markers of a figure's groups of variants, in turn (a group keeps its marker in every panel)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h", "*")
#: the dashes of the lines that join a series of final values, in turn
DASHES = ("-", "--", ":", "-.")
#: markers along a curve: about one per tenth of the axes' diagonal
MARK_EVERY = 0.1


@dataclass(frozen=True)
class Look:
    """How a figure draws one group of variants, in every panel: its colour and its marker."""

    colour: Any
    marker: str


def looks(levels: Sequence, palette: str | Sequence) -> dict[Any, Look]:
    """One look per level of a figure's grouping, made once per figure and passed to every panel, whatever order
    a panel sorts by: the colours of ``palette`` (a seaborn palette name, or a list of colours in the order of
    ``levels``) and ``MARKERS`` in turn."""
    levels = list(levels)
    colours = sns.color_palette(palette, len(levels)) if isinstance(palette, str) else list(palette)
    return {level: Look(colour, MARKERS[i % len(MARKERS)]) for i, (level, colour) in enumerate(zip(levels, colours))}


def band_lines(
    ax: plt.Axes, stats: pd.DataFrame, hue: str, look_of: Mapping[Any, Look], title: str | None = None
) -> None:
    """Mean against step, one line per ``hue`` value in the order of ``look_of`` and in its look, with the
    ``lower``–``upper`` band, under the legend title ``title`` (default ``hue``)."""
    for level, look in look_of.items():
        part = stats[stats[hue] == level].sort_values("step")
        if part.empty:
            continue
        ax.plot(
            part["step"], part["mean"], color=look.colour, marker=look.marker, markevery=MARK_EVERY, label=str(level)
        )
        ax.fill_between(part["step"], part["lower"], part["upper"], color=look.colour, alpha=0.2, lw=0)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("SGD step")
    ax.legend(title=title or hue)


def point(ax: plt.Axes, x: float, stats: pd.Series, look: Look, filled: bool = True, **kwargs) -> None:
    """One final value (a ``seed_stats`` row: ``mean``, ``lower``, ``upper``) at ``x`` with its error bar, in
    ``look`` (hollow unless ``filled``)."""
    mean, lower, upper = (float(stats[k]) for k in ("mean", "lower", "upper"))
    face = look.colour if filled else "white"
    ax.errorbar(
        [x],
        [mean],
        yerr=[[mean - lower], [upper - mean]],
        capsize=3,
        fmt=look.marker,
        color=look.colour,
        mfc=face,
        **kwargs,
    )


def fill_key(labels: Sequence[str]) -> list[Line2D]:
    """Legend entries for what filled and hollow markers mean (``labels``: filled's, hollow's), in grey: the
    colours and markers are the variants'."""
    return [
        Line2D([], [], color="grey", marker="o", ls="none", mfc=face, label=label)
        for label, face in zip(labels, ("grey", "white"))
    ]


# --- grouping: the settings an experiment's variants vary, from its config ------------------------------------


@dataclass(frozen=True)
class Grouping:
    """How a figure groups an experiment's curves: by the table's ``column``, in ``order``, under ``title``."""

    column: str
    order: list
    title: str


def grouping(table: pd.DataFrame, group_by: Sequence[str]) -> Grouping:
    """The settings the experiment's variants vary (``group_by``, from the config through the figure rule's
    params: ``onenn.plan.experiments.group_by``) as a grouping of the table's rows. One setting: its own
    column, its values sorted (numbers as numbers); several: one group per variant, in ``variant_order``, titled
    by the settings and sorted by them in their order; none (an experiment of one variant): its variant."""
    missing = [k for k in group_by if k not in table]
    if missing:
        raise ValueError(
            f"cannot group the curves by {', '.join(missing)}: not a column of the table "
            f"(columns: {', '.join(table.columns)})"
        )
    if len(group_by) == 1:
        return Grouping(group_by[0], sorted(table[group_by[0]].unique()), group_by[0])
    if not group_by:
        return Grouping("variant", variant_order(table), "variant")
    per_variant = table.groupby("variant", sort=True)[list(group_by)].first()
    return Grouping("variant", list(per_variant.sort_values(list(group_by), kind="stable").index), ", ".join(group_by))


def in_order(stats: pd.DataFrame, group: Grouping) -> pd.DataFrame:
    """The rows of ``stats`` (one per level of the grouping) in the grouping's order."""
    rank = {level: i for i, level in enumerate(group.order)}
    return stats.sort_values(group.column, key=lambda c: c.map(rank), kind="stable").reset_index(drop=True)


#: symbols of settings in labels (docs/method.md)
SYMBOLS = {"epsilon": "ε", "sigma": "σ", "lr": "η", "delta": "δ*"}
#: what a value of ``noise_blocks`` says in a label (the default, ``all``, says nothing)
NOISE_BLOCKS = {"all": "", "label": "label columns", "other": "other blocks"}


def setting_label(key: str, value: Any) -> str:
    """One setting of a run as a label: ``ε=0.3``, ``d=4``, ``label columns`` ('' for noise in all blocks)."""
    if key == "noise_blocks":
        return NOISE_BLOCKS.get(str(value), f"noise in {value} blocks")
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{SYMBOLS.get(key, key)}={shown}"


def settings_label(values: Mapping[str, Any], keys: Sequence[str]) -> str:
    """The settings ``keys`` of a run as a label: ``ε=0.3``, ``ε=3, label columns``."""
    parts = [p for p in (setting_label(k, values[k]) for k in keys) if p]
    return ", ".join(parts) or ", ".join(f"{k}={values[k]}" for k in keys)


def is_number(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def final_against(
    ax: plt.Axes,
    final: pd.DataFrame,
    x: str,
    series: Sequence[str],
    level: str,
    look_of: Mapping[Any, Look],
    series_label: Callable[[dict], str | None],
) -> None:
    """Final values (``seed_stats`` rows, one per level of the figure's grouping, the column ``level``) against
    the setting ``x``: each point in its level's look; the points of one value of the settings ``series`` joined
    by a thin grey line in a dash of its own, labelled ``series_label`` of its settings (a series of one point:
    its point labelled). A number ``x`` is drawn to scale: on a log scale with a tick at each value where its
    values are positive and span a factor 4 or more (sweeps of d, N, batch or lr are usually geometric);
    anything else at equal spacing."""
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


# --- the paper's training experiments ---------------------------------------------------------------------------


def convergence(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Training loss (the loss on the uniform test set) and separated-test argmax accuracy against step,
    one line per group of variants (per N in experiment 1), mean ± band_sd sd over seeds."""
    group = grouping(table, group_by)
    look_of = looks(group.order, style.palette)
    fig, (left, right) = plt.subplots(1, 2, figsize=(style.width, style.height))
    by = [group.column, "step"]
    loss = seed_stats(table[table["test_set"] == "uniform"], by, "test_loss", style.band_sd)
    band_lines(left, loss, group.column, look_of, group.title)
    left.set_yscale("log")
    left.set_ylabel("training loss (uniform test set)")
    acc = seed_stats(table[table["test_set"] == "separated"], by, "accuracy", style.band_sd)
    band_lines(right, acc, group.column, look_of, group.title)
    right.set_ylabel("argmax accuracy (separated test set)")
    right.set_ylim(0, 1.02)
    return fig


def error_points(ax: plt.Axes, x: Sequence[float], stats: pd.DataFrame, **kwargs) -> None:
    """``mean`` at ``x`` with error bars from ``lower`` to ``upper``."""
    yerr = np.vstack([stats["mean"] - stats["lower"], stats["upper"] - stats["mean"]])
    ax.errorbar(np.asarray(x, dtype=float), stats["mean"], yerr=yerr, capsize=3, **kwargs)


def distribution_shift(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Separated-test logit error and argmax accuracy, and uniform-test argmax accuracy, against step,
    one line per group of variants (per K in experiment 3)."""
    group = grouping(table, group_by)
    look_of = looks(group.order, style.palette)
    fig, axes = plt.subplots(1, 3, figsize=(1.4 * style.width, style.height))
    panels = (
        ("separated", "logit_error", "logit error (separated test set)"),
        ("separated", "accuracy", "argmax accuracy (separated test set)"),
        ("uniform", "accuracy", "argmax accuracy (uniform test set)"),
    )
    for ax, (test_set, metric, label) in zip(axes, panels):
        stats = seed_stats(table[table["test_set"] == test_set], [group.column, "step"], metric, style.band_sd)
        band_lines(ax, stats, group.column, look_of, group.title)
        ax.set_ylabel(label)
        if metric == "accuracy":
            ax.set_ylim(0, 1.02)
        else:
            ax.set_yscale("log")
    return fig


def number_of_classes(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Training loss against step per group of variants (per K in experiment 4), the same divided by
    (K−1)/K (Lemma 2's factor), and the final separated accuracy per group next to chance, 1/K."""
    group = grouping(table, group_by)
    look_of = looks(group.order, style.palette)
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(1.4 * style.width, style.height))
    uniform = class_scaled(table[table["test_set"] == "uniform"], "test_loss")
    for ax, value, label in (
        (left, "test_loss", "training loss"),
        (middle, "test_loss_scaled", "training loss / ((K−1)/K)"),
    ):
        stats = seed_stats(uniform, [group.column, "step"], value, style.band_sd)
        band_lines(ax, stats, group.column, look_of, group.title)
        ax.set_yscale("log")
        ax.set_ylabel(label)
    separated = final_step(table[table["test_set"] == "separated"])
    final = in_order(seed_stats(separated, [group.column], "accuracy", style.band_sd), group)
    K = final[group.column].map(separated.groupby(group.column)["K"].first())
    positions = np.arange(len(final))
    for position, (_, row) in zip(positions, final.iterrows()):
        point(right, position, row, look_of[row[group.column]])
    right.plot(positions, 1.0 / K, "x", color="grey", label="chance 1/K")
    right.set_xticks(positions, [str(level) for level in final[group.column]])
    right.set_xlabel(group.title)
    right.set_ylabel("final argmax accuracy (separated)")
    right.set_ylim(0, 1.05)
    right.legend()
    return fig


#: colours of the block-confined perturbations (the others take the palette)
CONFINED_COLOURS = {"label": "tab:red", "other": "tab:orange"}


def init_label(values: dict) -> str | None:
    """A series of the final accuracy of ``diagonal_init``: ``noise in label blocks``, its other settings."""
    label = ", ".join(f"noise in {v} blocks" if k == "noise_blocks" else setting_label(k, v) for k, v in values.items())
    return label or None


def diagonal_init(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Final separated accuracy against the first setting the variants vary (ε in experiment 5), one series per
    value of the others (the noise blocks); the label-column norm at the first and the last step per variant; the
    distance to the family against step per variant, over the whole matrix and over the blocks the loss
    depends on."""
    group_by = list(group_by)
    runs = table.drop_duplicates("variant").set_index("variant")
    labels = {v: settings_label(row, group_by) if group_by else str(v) for v, row in runs.iterrows()}
    table = table.assign(init=table["variant"].map(labels))
    order = [labels[v] for v in variant_order(table)]
    # one look per start: the palette for the perturbations of every block, contrasting colours for the confined
    blocks = table.drop_duplicates("init").set_index("init")["noise_blocks"]
    shades = iter(sns.color_palette(style.palette, int((~blocks.isin(list(CONFINED_COLOURS))).sum())))
    look_of = looks(order, [CONFINED_COLOURS.get(blocks[label]) or next(shades) for label in order])
    fig, axes = plt.subplots(2, 2, figsize=(style.width, 2 * style.height))
    (acc_ax, norm_ax), (dist_ax, active_ax) = axes

    x, series = (group_by[0], group_by[1:]) if group_by else ("init", [])
    by = list(dict.fromkeys(["init", *series, x]))
    final = seed_stats(final_step(table[table["test_set"] == "separated"]), by, "accuracy", style.band_sd)
    final_against(acc_ax, final, x, series, "init", look_of, init_label)
    acc_ax.set_ylabel("final argmax accuracy (separated)")
    acc_ax.set_ylim(0, 1.05)
    if series:
        acc_ax.legend()

    ends = first_and_last(table, "label_norm").melt(id_vars=["init"], value_vars=["start", "end"], var_name="when")
    ends = seed_stats(ends, ["init", "when"], "value", style.band_sd)
    positions = {label: i for i, label in enumerate(order)}
    for shift, when in ((-0.15, "start"), (0.15, "end")):
        for _, row in ends[ends["when"] == when].iterrows():
            point(norm_ax, positions[row["init"]] + shift, row, look_of[row["init"]], filled=when == "end")
    norm_ax.set_xticks(range(len(order)), order, rotation=45, ha="right")
    norm_ax.set_ylabel("label-column norm ‖(W12, W22, W32)‖")
    norm_ax.legend(handles=fill_key(["step end", "step start"]))

    for ax, value, label in (
        (dist_ax, "dist_family", "distance to the family (whole W)"),
        (active_ax, "dist_family_active", "distance to the family (active blocks)"),
    ):
        stats = seed_stats(table[table["test_set"] == "separated"], ["init", "step"], value, style.band_sd)
        band_lines(ax, stats, "init", look_of)
        ax.set_yscale("symlog", linthresh=1e-2)  # ε = 0 starts on the family: distance 0
        ax.set_ylabel(label)
        ax.get_legend().remove()
    active_ax.legend(
        *dist_ax.get_legend_handles_labels(),
        title=", ".join(group_by) or "variant",
        fontsize="x-small",
        loc="center left",
        bbox_to_anchor=(1.02, 0.5),
    )
    return fig


def loss_function(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Final separated and uniform argmax accuracy per group of variants (per loss in experiment 6: mixture
    weight c, squentropy), and the separated accuracy against step per group."""
    group = grouping(table, group_by)
    look_of = looks(group.order, style.palette)
    fig, (left, right) = plt.subplots(1, 2, figsize=(style.width, style.height))
    final = seed_stats(final_step(table), ["test_set", group.column], "accuracy", style.band_sd)
    positions = {level: i for i, level in enumerate(group.order)}
    test_sets = sorted(final["test_set"].unique())[:2]
    for shift, test_set, filled in zip((-0.12, 0.12), test_sets, (True, False)):
        for _, row in final[final["test_set"] == test_set].iterrows():
            point(left, positions[row[group.column]] + shift, row, look_of[row[group.column]], filled=filled)
    left.set_xticks(range(len(group.order)), [str(level) for level in group.order], rotation=30, ha="right")
    left.set_xlabel(group.title)
    left.set_ylabel("final argmax accuracy")
    left.set_ylim(0, 1.05)
    left.legend(handles=fill_key([f"{test_set} test set" for test_set in test_sets]))
    acc = seed_stats(table[table["test_set"] == "separated"], [group.column, "step"], "accuracy", style.band_sd)
    band_lines(right, acc, group.column, look_of, group.title)
    right.set_ylabel("argmax accuracy (separated test set)")
    right.set_ylim(0, 1.02)
    return fig


def theorem_regime(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """SGD from W0 at several σ (ours: σ = 3 and σ above the explicit part of Theorem 1's σ bound): separated-test
    argmax accuracy and training loss; ξ1 (solid) and ξ2 (dashed) of the projection onto the family; the distance
    to the family over the blocks the loss depends on; against step, one colour per group of variants (per σ)."""
    group = grouping(table, group_by)
    look_of = looks(group.order, style.palette)
    fig, axes = plt.subplots(2, 2, figsize=(style.width, 2 * style.height))
    (acc_ax, loss_ax), (xi_ax, dist_ax) = axes
    by = [group.column, "step"]
    separated = table[table["test_set"] == "separated"]
    band_lines(acc_ax, seed_stats(separated, by, "accuracy", style.band_sd), group.column, look_of, group.title)
    acc_ax.set_ylabel("argmax accuracy (separated test set)")
    acc_ax.set_ylim(0, 1.02)
    loss = seed_stats(table[table["test_set"] == "uniform"], by, "test_loss", style.band_sd)
    band_lines(loss_ax, loss, group.column, look_of, group.title)
    loss_ax.set_yscale("log")
    loss_ax.set_ylabel("training loss (uniform test set)")
    for value, dashes in (("xi1", "-"), ("xi2", "--")):
        stats = seed_stats(separated, by, value, style.band_sd)
        for level, look in look_of.items():
            part = stats[stats[group.column] == level].sort_values("step")
            xi_ax.plot(part["step"], part["mean"], color=look.colour, ls=dashes, label=f"{value}, {level}")
            xi_ax.fill_between(part["step"], part["lower"], part["upper"], color=look.colour, alpha=0.2, lw=0)
    xi_ax.set_xscale("symlog", linthresh=1)
    xi_ax.set_xlabel("SGD step")
    xi_ax.set_ylabel("ξ1 (solid), ξ2 (dashed) of Π(W)")
    xi_ax.legend(fontsize="x-small")
    dist = seed_stats(separated, by, "dist_family_active", style.band_sd)
    band_lines(dist_ax, dist, group.column, look_of, group.title)
    dist_ax.set_yscale("symlog", linthresh=1e-2)  # W0 is on the family: distance 0
    dist_ax.set_ylabel("distance to the family (active blocks)")
    return fig


# --- any training experiment --------------------------------------------------------------------------------

#: the sweep figure's columns: test set, metric, what it is, log scale
SWEEP_PANELS = (
    ("uniform", "test_loss", "training loss (uniform test set)", True),
    ("separated", "accuracy", "argmax accuracy (separated test set)", False),
    ("uniform", "accuracy", "argmax accuracy (uniform test set)", False),
)


def sweep(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Any training experiment. Top: the training loss and the separated and uniform argmax accuracy against
    step, one line per group of variants (per value of the swept setting), mean ± band_sd sd over seeds. Below,
    when the first setting the variants vary is a number: the final values against it, each in its group's look,
    those of one value of the other settings they vary joined by a grey line."""
    sets = set(table["test_set"])
    if not set(TEST_SETS) <= sets:
        raise ValueError(
            f"figure 'sweep' draws a training experiment (test sets uniform and separated); got {sorted(sets)}"
        )
    group = grouping(table, group_by)
    against = bool(group_by) and is_number(table[group_by[0]])
    rows = 2 if against else 1
    fig, axes = plt.subplots(rows, 3, figsize=(1.4 * style.width, rows * style.height), squeeze=False)
    series = list(group_by[1:])
    look_of = looks(group.order, style.palette)

    def series_label(values: dict) -> str | None:
        return settings_label(values, series) if series else None

    for i, (test_set, metric, label, log_y) in enumerate(SWEEP_PANELS):
        part = table[table["test_set"] == test_set]
        top = axes[0, i]
        stats = seed_stats(part, [group.column, "step"], metric, style.band_sd)
        band_lines(top, stats, group.column, look_of, group.title)
        top.set_ylabel(label)
        if i:
            top.get_legend().remove()
        if against:
            by = list(dict.fromkeys([group.column, *group_by]))
            final = seed_stats(final_step(part), by, metric, style.band_sd)
            final_against(axes[1, i], final, group_by[0], series, group.column, look_of, series_label)
            axes[1, i].set_ylabel(f"final {label}")
            if series and i == 0:
                axes[1, i].legend(title=", ".join(series), fontsize="small")
        for ax in axes[:, i]:
            if log_y:
                ax.set_yscale("log")
            else:
                ax.set_ylim(0, 1.02)
    return fig


def scaling_identity(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str] = ()) -> plt.Figure:
    """The measured ratio L_MC / L_bin with its confidence interval, one axis per panel of the config: a
    panel at one (ξ1, ξ2) against K with the curve (K−1)/K; a panel over several (ξ1, ξ2), one line per K
    with (K−1)/K dashed."""
    panels = list(dict.fromkeys(table["panel"]))
    fig, axes = plt.subplots(1, len(panels), figsize=(style.width, style.height), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        part = table[table["panel"] == panel].rename(
            columns={"ratio": "mean", "ratio_lower": "lower", "ratio_upper": "upper"}
        )
        pairs = list(dict.fromkeys(zip(part["xi1"], part["xi2"])))
        if len(pairs) == 1:
            part = part.sort_values("K")
            error_points(ax, part["K"], part, fmt="o", label="measured")
            K = np.linspace(part["K"].min(), part["K"].max(), 200)
            ax.plot(K, (K - 1) / K, "k--", lw=1, label="(K−1)/K")
            ax.set_xlabel("K")
            ax.set_title(f"(ξ1, ξ2) = ({pairs[0][0]:g}, {pairs[0][1]:g})")
        else:
            levels = sorted(part["K"].unique())
            colours = dict(zip(levels, sns.color_palette(style.palette, len(levels))))
            x = {pair: i for i, pair in enumerate(pairs)}
            for K, rows in part.groupby("K", sort=True):
                positions = [x[p] for p in zip(rows["xi1"], rows["xi2"])]
                error_points(ax, positions, rows, fmt="o-", color=colours[K], label=f"K={K}")
                ax.axhline((K - 1) / K, color=colours[K], ls="--", lw=0.8)
            ax.set_xticks(range(len(pairs)), [f"({a:g}, {b:g})" for a, b in pairs])
            ax.set_xlabel("(ξ1, ξ2)")
        ax.set_ylabel("L_MC / L_bin")
        ax.legend(fontsize="small")
    return fig


def binary(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """The binary paper's experiment: loss on the fixed training set, MSE to the 1-NN predictor on the
    separated set, and the distance of W to the family (blocks the loss depends on), against SGD step, one line
    per group of variants."""
    group = grouping(table, group_by)
    look_of = looks(group.order, style.palette)
    fig, axes = plt.subplots(1, 3, figsize=(1.5 * style.width, style.height))
    panels = (
        ("train", "test_loss", "training loss (whole training set)", True),
        ("separated", "nn_mse", "MSE to the 1-NN predictor (separated)", True),
        ("train", "dist_family_active", "distance to the family (active blocks)", False),
    )
    for ax, (test_set, metric, label, log_y) in zip(axes, panels):
        stats = seed_stats(table[table["test_set"] == test_set], [group.column, "step"], metric, style.band_sd)
        band_lines(ax, stats, group.column, look_of, group.title)
        if log_y:
            ax.set_yscale("log")
        ax.set_ylabel(label)
    for ax in axes[1:]:
        ax.get_legend().remove()
    return fig


def landscape(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str] = ()) -> plt.Figure:
    """The reduced loss L(xi1, xi2): heat map with the line xi1 = (7/15) xi2, and the surface."""
    grid = table.pivot(index="xi2", columns="xi1", values="reduced_loss").sort_index().sort_index(axis=1)
    xi1, xi2, loss = grid.columns.to_numpy(), grid.index.to_numpy(), grid.to_numpy()
    fig = plt.figure(figsize=(style.width, style.height))
    heat = fig.add_subplot(1, 2, 1)
    mesh = heat.pcolormesh(xi1, xi2, loss, cmap=style.palette, shading="auto")
    fig.colorbar(mesh, ax=heat, label="L(ξ1, ξ2)")
    heat.plot(xi1, xi1 / XI_RATIO_BOUND, color="white", ls="--", lw=1, label="ξ1 = (7/15) ξ2")
    heat.set_ylim(xi2.min(), xi2.max())
    heat.set_xlabel("ξ1")
    heat.set_ylabel("ξ2")
    heat.legend(loc="lower right")
    surface = fig.add_subplot(1, 2, 2, projection="3d")
    X, Y = np.meshgrid(xi1, xi2)
    surface.plot_surface(X, Y, loss, cmap=style.palette, linewidth=0)
    surface.set_xlabel("ξ1")
    surface.set_ylabel("ξ2")
    surface.set_zlabel("L")
    return fig


def audit(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str] = ()) -> plt.Figure:
    """The reduced-dynamics audit, one colour per sigma: the ratio xi1/xi2 against 7/15, the loss with the
    O(1/log t) envelope, the boundary r = 1 - xi2/xi1 and the mass of prompts beyond it (t_(1) < r), xi2 - xi1,
    and the GD-flow overlap. Solid: the population flow; dashed: the same at half the nodes per variable;
    dotted: the flow on the weighted sample (GD, then its flow) up to the sample's end."""
    fig, axes = plt.subplots(3, 2, figsize=(style.width, 3 * style.height))
    main = audit_trajectory(table)
    variants = sorted(main["variant"].unique(), key=lambda v: float(main.loc[main["variant"] == v, "sigma"].iloc[0]))
    colours = dict(zip(variants, sns.color_palette(style.palette, len(variants))))
    (ratio_ax, loss_ax), (boundary_ax, stuck_ax), (gap_ax, overlap_ax) = axes
    values = (
        (ratio_ax, "xi_ratio"),
        (loss_ax, "reduced_loss"),
        (boundary_ax, "boundary"),
        (stuck_ax, "stuck_mass"),
        (gap_ax, "xi2_minus_xi1"),
    )
    for v in variants:
        sigma = main.loc[main["variant"] == v, "sigma"].iloc[0]
        label = f"{v} (σ = {sigma:.4g})"
        part = main[(main["variant"] == v) & (main["time"] > 0)]
        mine = table[(table["variant"] == v) & (table["time"] > 0)]
        sample = mine[mine["source"].isin(["gd", "continuation"])].sort_values("time")
        for ax, value in values:
            ax.plot(part["time"], part[value], color=colours[v], label=label)
            half = mine[mine["source"] == "population/2"]
            ax.plot(half["time"], half[value], color=colours[v], ls="--", lw=1)
            ax.plot(sample["time"], sample[value], color=colours[v], ls=":", lw=1)
        # the O(1/log t) envelope C / log t, with C the largest loss * log t after t = 10
        late = part[part["time"] >= 10]
        if len(late):
            constant = float(late["loss_log_time"].max())
            loss_ax.plot(late["time"], constant / np.log(late["time"]), color=colours[v], ls="-.", lw=0.8)
        gd = mine[mine["source"] == "gd"].sort_values("time")
        flow = mine[mine["source"] == "flow"].sort_values("time")
        overlap_ax.plot(gd["time"], gd["xi1"], color=colours[v], marker="o", ms=3, ls="none", label=f"{v}: GD ξ1")
        overlap_ax.plot(flow["time"], flow["xi1"], color=colours[v], label=f"{v}: flow ξ1")
    ratio_ax.axhline(XI_RATIO_BOUND, color="black", ls="--", lw=1, label="7/15 (Lemma 12)")
    ratio_ax.axhline(0.5, color="grey", ls=":", lw=1, label="1/2 (r = −1)")
    ratio_ax.set_ylabel("ξ1 / ξ2")
    ratio_ax.legend(fontsize="small")
    loss_ax.set_yscale("log")
    loss_ax.set_ylabel("reduced loss (dash-dot: C / log t)")
    boundary_ax.set_ylabel("boundary r = 1 − ξ2/ξ1")
    boundary_ax.set_ylim(-1.05, 1.05)
    stuck_ax.set_yscale("log")
    late_mass = main.loc[main["time"] == main.groupby("variant")["time"].transform("max"), "stuck_mass"]
    if len(late_mass) and (late_mass > 0).all():  # from a decade below the end (earlier: e^-hundreds)
        stuck_ax.set_ylim(0.1 * float(late_mass.min()), 1.0)
    stuck_ax.set_ylabel("mass beyond r: P(t₍₁₎ < r)")
    gap_ax.set_ylabel("ξ2 − ξ1")
    gap_ax.set_yscale("symlog", linthresh=1)
    overlap_ax.set_ylabel("ξ1: exact GD (dots) and gradient flow")
    for ax in axes.ravel():
        ax.set_xscale("log")
        ax.set_xlabel("time t = η · step")
    return fig


def full_matrix(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str] = ()) -> plt.Figure:
    """Full-matrix GD against the reduced GD on the same prompts: (xi1, xi2) of Π(W) and the reduced ones, and
    the distance of W to the family (over the blocks that can move), against step, one colour per number of
    prompts."""
    fig, (xi_ax, dist_ax) = plt.subplots(1, 2, figsize=(style.width, style.height))
    levels = sorted(table["prompts"].unique())
    colours = dict(zip(levels, sns.color_palette(style.palette, len(levels))))
    for prompts, part in table.groupby("prompts"):
        part = part[part["step"] > 0].sort_values("step")
        for value, marker in (("xi1", "o"), ("xi2", "s")):
            xi_ax.plot(
                part["step"],
                part[value],
                color=colours[prompts],
                marker=marker,
                ms=3,
                ls="none",
                label=f"{value} of Π(W), {prompts} prompts",
            )
            xi_ax.plot(part["step"], part[f"{value}_reduced"], color=colours[prompts], lw=1)
        dist_ax.plot(
            part["step"], part["dist_family_active"], color=colours[prompts], label=f"‖W − Π(W)‖, {prompts} prompts"
        )
        dist_ax.plot(
            part["step"], part["xi_gap"], color=colours[prompts], ls="--", label=f"|ξ − ξ_reduced|, {prompts} prompts"
        )
    xi_ax.set_ylabel("ξ: full-matrix GD (markers), reduced GD (lines)")
    xi_ax.legend(fontsize="small")
    dist_ax.set_yscale("log")
    dist_ax.legend(fontsize="small")
    for ax in (xi_ax, dist_ax):
        ax.set_xscale("log")
        ax.set_xlabel("GD step")
    return fig


#: figure name (the config's ``figure``) -> its function: (table, style, group_by) -> figure. The figures of
#: training experiments (``onenn.plan.kinds.TRAIN_FIGURES``) and ``binary`` group their curves by
#: ``group_by``; the others ignore it.
FIGURES: dict[str, Callable[[pd.DataFrame, PlotStyle, Sequence[str]], plt.Figure]] = {
    "convergence": convergence,
    "scaling_identity": scaling_identity,
    "distribution_shift": distribution_shift,
    "number_of_classes": number_of_classes,
    "diagonal_init": diagonal_init,
    "loss_function": loss_function,
    "theorem_regime": theorem_regime,
    "sweep": sweep,
    "binary": binary,
    "landscape": landscape,
    "audit": audit,
    "full_matrix": full_matrix,
}


def legends(fig: plt.Figure) -> list[dict[str, Any]]:
    """The title and the entries of every legend of ``fig``, axes by axes."""
    out = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            out.append({"title": legend.get_title().get_text(), "entries": [t.get_text() for t in legend.get_texts()]})
    return out


def metadata(fmt: str, name: str, fig: plt.Figure, group_by: Sequence[str]) -> dict[str, str] | None:
    """What a saved figure says about itself, readable without looking at it: its name and grouping (PNG, PDF,
    SVG), and for PNG its legends as JSON (the text chunk ``Legends``)."""
    title = f"onenn figure {name}" + (f", grouped by {', '.join(group_by)}" if group_by else "")
    if fmt == "png":
        return {"Title": title, "Legends": json.dumps(legends(fig))}
    return {"Title": title} if fmt in ("pdf", "svg") else None


def figure(name: str, table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str] = ()) -> plt.Figure:
    """Figure ``name`` of an experiment's table, its curves grouped by the settings ``group_by``."""
    if name not in FIGURES:
        raise ValueError(f"figure must be one of {', '.join(sorted(FIGURES))}; got {name!r}")
    return FIGURES[name](table, style, list(group_by))


@contextmanager
def draw(name: str, table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str] = ()) -> Iterator[plt.Figure]:
    """Figure ``name`` of an experiment's table, its curves grouped by ``group_by``, laid out, inside the style's
    seaborn context (the caller saves it there, so that the context's settings reach the file too), and closed
    on leaving."""
    with sns.plotting_context(style.context), sns.axes_style("whitegrid"):
        fig = figure(name, table, style, group_by)
        try:
            fig.tight_layout()
            yield fig
        finally:
            plt.close(fig)
