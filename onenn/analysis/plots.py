"""Seaborn figures, one function per figure name of the config (``FIGURES``); they only draw. A training figure
groups its curves by the settings its variants vary (``group_by``), a look per group; ``sweep`` draws any."""

from collections.abc import Callable, Sequence
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from onenn.analysis.drawing import (
    Grouping,
    PlotStyle,
    band_panel,
    fill_key,
    final_against,
    grouped,
    is_number,
    looks,
    plain_log_labels,
    point,
    setting_label,
    settings_label,
)
from onenn.analysis.tables import audit_trajectory, final_step, first_and_last, seed_stats, variant_order
from onenn.base.columns import TEST_SETS
from onenn.maths.family import XI_RATIO_BOUND

#: the band panels of several figures: (test set, metric, y label, y scale)
LOSS = ("uniform", "test_loss", "training loss (uniform test set)", "log")
SEPARATED_ACCURACY = ("separated", "accuracy", "argmax accuracy (separated test set)", "unit")
UNIFORM_ACCURACY = ("uniform", "accuracy", "argmax accuracy (uniform test set)", "unit")
LOGIT = ("separated", "logit_error", "logit error (separated test set)", "log")
#: the config's ``plots`` at their defaults: ``figure``'s style unless told
STYLE = PlotStyle()
#: colours of the block-confined perturbations (the others take the palette)
CONFINED_COLOURS = {"label": "tab:red", "other": "tab:orange"}


def init_label(values: dict) -> str | None:
    label = ", ".join(f"noise in {v} blocks" if k == "noise_blocks" else setting_label(k, v) for k, v in values.items())
    return label or None


def error_points(ax: plt.Axes, x: Sequence[float], stats: pd.DataFrame, **kwargs) -> None:
    yerr = np.vstack([stats["mean"] - stats["lower"], stats["upper"] - stats["mean"]])
    ax.errorbar(np.asarray(x, dtype=float), stats["mean"], yerr=yerr, capsize=3, **kwargs)


def bands(
    table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str], panels: tuple, width: float, legends: bool = True
) -> plt.Figure:
    """A row of ``band_panel``s, ``width`` times the style's width; unless ``legends``, only the first has a legend."""
    group, look_of = grouped(table, style, group_by)
    fig, axes = plt.subplots(1, len(panels), figsize=(width * style.width, style.height))
    for i, (ax, panel) in enumerate(zip(axes, panels)):
        band_panel(ax, table, group, look_of, style.band_sd, panel)
        if i and not legends:
            ax.get_legend().remove()
    return fig


def number_of_classes(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Training loss against step, the same over (K−1)/K (Lemma 2), and the final separated accuracy next to 1/K."""
    group, look_of = grouped(table, style, group_by)
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(1.4 * style.width, style.height))
    uniform = table[table["test_set"] == "uniform"]
    uniform = uniform.assign(test_loss_scaled=uniform["test_loss"] * uniform["K"] / (uniform["K"] - 1))
    band_panel(left, uniform, group, look_of, style.band_sd, ("uniform", "test_loss", "training loss", "log"))
    scaled = ("uniform", "test_loss_scaled", "training loss / ((K−1)/K)", "log")
    band_panel(middle, uniform, group, look_of, style.band_sd, scaled)
    separated = final_step(table[table["test_set"] == "separated"])
    final = seed_stats(separated, [group.column], "accuracy", style.band_sd)
    rank = {level: i for i, level in enumerate(group.order)}
    final = final.sort_values(group.column, key=lambda c: c.map(rank), kind="stable").reset_index(drop=True)
    K = final[group.column].map(separated.groupby(group.column)["K"].first())
    positions = np.arange(len(final))
    for position, (_, row) in zip(positions, final.iterrows()):
        point(right, position, row, look_of[row[group.column]])
    right.plot(positions, 1.0 / K, "x", color="grey", label="chance 1/K")
    right.set_xticks(positions, [str(level) for level in final[group.column]])
    right.set(xlabel=group.title, ylabel="final argmax accuracy (separated)", ylim=(0, 1.05))
    right.legend()
    return fig


def diagonal_init(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Final separated accuracy against ε (a series per noise blocks), label-column norms, distances to the family."""
    runs = table.drop_duplicates("variant").set_index("variant")
    labels = {v: settings_label(row, group_by) if group_by else str(v) for v, row in runs.iterrows()}
    table = table.assign(init=table["variant"].map(labels))
    order = [labels[v] for v in variant_order(table)]
    blocks = table.drop_duplicates("init").set_index("init")["noise_blocks"]
    shades = iter(sns.color_palette(style.palette, int((~blocks.isin(list(CONFINED_COLOURS))).sum())))
    look_of = looks(order, [CONFINED_COLOURS.get(blocks[label]) or next(shades) for label in order])
    fig, ((acc_ax, norm_ax), (dist_ax, active_ax)) = plt.subplots(2, 2, figsize=(style.width, 2 * style.height))

    x, series = (group_by[0], group_by[1:]) if group_by else ("init", [])
    by = list(dict.fromkeys(["init", *series, x]))
    final = seed_stats(final_step(table[table["test_set"] == "separated"]), by, "accuracy", style.band_sd)
    final_against(acc_ax, final, x, series, "init", look_of, init_label)
    acc_ax.set(ylabel="final argmax accuracy (separated)", ylim=(0, 1.05))
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

    inits = Grouping("init", order, "init")
    for ax, value, label in (
        (dist_ax, "dist_family", "distance to the family (whole W)"),
        (active_ax, "dist_family_active", "distance to the family (active blocks)"),
    ):
        band_panel(ax, table, inits, look_of, style.band_sd, ("separated", value, label, None))
        ax.set_yscale("symlog", linthresh=1e-2)  # ε = 0 starts on the family: distance 0
        ax.get_legend().remove()
    title = ", ".join(group_by) or "variant"
    handles = dist_ax.get_legend_handles_labels()
    active_ax.legend(*handles, title=title, fontsize="x-small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig


def loss_function(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Final separated and uniform accuracy per group (per loss in experiment 6), separated accuracy against step."""
    group, look_of = grouped(table, style, group_by)
    fig, (left, right) = plt.subplots(1, 2, figsize=(style.width, style.height))
    final = seed_stats(final_step(table), ["test_set", group.column], "accuracy", style.band_sd)
    positions = {level: i for i, level in enumerate(group.order)}
    test_sets = sorted(final["test_set"].unique())[:2]
    for shift, test_set, filled in zip((-0.12, 0.12), test_sets, (True, False)):
        for _, row in final[final["test_set"] == test_set].iterrows():
            point(left, positions[row[group.column]] + shift, row, look_of[row[group.column]], filled=filled)
    left.set_xticks(range(len(group.order)), [str(level) for level in group.order], rotation=30, ha="right")
    left.set(xlabel=group.title, ylabel="final argmax accuracy", ylim=(0, 1.05))
    left.legend(handles=fill_key([f"{test_set} test set" for test_set in test_sets]))
    band_panel(right, table, group, look_of, style.band_sd, SEPARATED_ACCURACY)
    return fig


def theorem_regime(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Against step, a colour per σ: separated accuracy, training loss, ξ1 (solid) and ξ2 (dashed) of Π(W), distance."""
    group, look_of = grouped(table, style, group_by)
    fig, ((acc_ax, loss_ax), (xi_ax, dist_ax)) = plt.subplots(2, 2, figsize=(style.width, 2 * style.height))
    band_panel(acc_ax, table, group, look_of, style.band_sd, SEPARATED_ACCURACY)
    band_panel(loss_ax, table, group, look_of, style.band_sd, LOSS)
    separated = table[table["test_set"] == "separated"]
    for value, dashes in (("xi1", "-"), ("xi2", "--")):
        stats = seed_stats(separated, [group.column, "step"], value, style.band_sd)
        for level, look in look_of.items():
            part = stats[stats[group.column] == level].sort_values("step")
            xi_ax.plot(part["step"], part["mean"], color=look.colour, ls=dashes, label=f"{value}, {level}")
            xi_ax.fill_between(part["step"], part["lower"], part["upper"], color=look.colour, alpha=0.2, lw=0)
    xi_ax.set_xscale("symlog", linthresh=1)
    xi_ax.set(xlabel="SGD step", ylabel="ξ1 (solid), ξ2 (dashed) of Π(W)")
    xi_ax.legend(fontsize="x-small")
    active = ("separated", "dist_family_active", "distance to the family (active blocks)", None)
    band_panel(dist_ax, table, group, look_of, style.band_sd, active)
    dist_ax.set_yscale("symlog", linthresh=1e-2)  # W0 is on the family: distance 0
    return fig


def sweep(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str]) -> plt.Figure:
    """Any training experiment: loss and accuracies against step per group; below, where the first varied setting
    is a number, the final values against it (one grey line per value of the other varied settings)."""
    sets = set(table["test_set"])
    if not set(TEST_SETS) <= sets:
        raise ValueError(
            f"figure 'sweep' draws a training experiment (test sets uniform and separated); got {sorted(sets)}"
        )
    group, look_of = grouped(table, style, group_by)
    against = bool(group_by) and is_number(table[group_by[0]])
    rows = 2 if against else 1
    fig, axes = plt.subplots(rows, 3, figsize=(1.4 * style.width, rows * style.height), squeeze=False)
    series = list(group_by[1:])

    def series_label(values: dict) -> str | None:
        return settings_label(values, series) if series else None

    for i, panel in enumerate((LOSS, SEPARATED_ACCURACY, UNIFORM_ACCURACY)):
        test_set, metric, label, scale = panel
        band_panel(axes[0, i], table, group, look_of, style.band_sd, panel)
        if i:
            axes[0, i].get_legend().remove()
        if against:
            by = list(dict.fromkeys([group.column, *group_by]))
            final = seed_stats(final_step(table[table["test_set"] == test_set]), by, metric, style.band_sd)
            final_against(axes[1, i], final, group_by[0], series, group.column, look_of, series_label)
            axes[1, i].set_ylabel(f"final {label}")
            if series and i == 0:
                axes[1, i].legend(title=", ".join(series), fontsize="small")
            if scale == "log":
                axes[1, i].set_yscale("log")
            else:
                axes[1, i].set_ylim(0, 1.02)
    return fig


def scaling_identity(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str] = ()) -> plt.Figure:
    """L_MC / L_bin with its interval per panel: at one (ξ1, ξ2) against K with (K−1)/K; over several, one line per K."""
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
            ax.set(xlabel="K", title=f"(ξ1, ξ2) = ({pairs[0][0]:g}, {pairs[0][1]:g})")
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


def landscape(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str] = ()) -> plt.Figure:
    """The reduced loss L(xi1, xi2): heat map with the line xi1 = (7/15) xi2, and the surface."""
    grid = table.pivot(index="xi2", columns="xi1", values="reduced_loss").sort_index().sort_index(axis=1)
    xi1, xi2, loss = grid.columns.to_numpy(), grid.index.to_numpy(), grid.to_numpy()
    fig = plt.figure(figsize=(style.width, style.height))
    heat = fig.add_subplot(1, 2, 1)
    mesh = heat.pcolormesh(xi1, xi2, loss, cmap=style.palette, shading="auto")
    fig.colorbar(mesh, ax=heat, label="L(ξ1, ξ2)")
    heat.plot(xi1, xi1 / XI_RATIO_BOUND, color="white", ls="--", lw=1, label="ξ1 = (7/15) ξ2")
    heat.set(xlabel="ξ1", ylabel="ξ2", ylim=(xi2.min(), xi2.max()))
    heat.legend(loc="lower right")
    surface = fig.add_subplot(1, 2, 2, projection="3d")
    X, Y = np.meshgrid(xi1, xi2)
    surface.plot_surface(X, Y, loss, cmap=style.palette, linewidth=0)
    surface.set(xlabel="ξ1", ylabel="ξ2", zlabel="L")
    return fig


def audit(table: pd.DataFrame, style: PlotStyle, group_by: Sequence[str] = ()) -> plt.Figure:
    """The audit, a colour per σ: ξ1/ξ2, the loss with C / log t, r, the mass beyond it, ξ2 − ξ1, the GD-flow overlap
    (docs/method.md §7); solid: the population flow, dashed: half the nodes, dotted: the weighted sample."""
    fig, axes = plt.subplots(3, 2, figsize=(style.width, 3 * style.height))
    main = audit_trajectory(table)
    sigmas = main.groupby("variant")["sigma"].first()
    variants = sorted(sigmas.index, key=lambda v: float(sigmas[v]))
    colours = dict(zip(variants, sns.color_palette(style.palette, len(variants))))
    (ratio_ax, loss_ax), (boundary_ax, stuck_ax), (gap_ax, overlap_ax) = axes
    values = list(zip(axes.ravel(), ("xi_ratio", "reduced_loss", "boundary", "stuck_mass", "xi2_minus_xi1")))
    for v in variants:
        label = f"{v} (σ = {sigmas[v]:.4g})"
        part = main[(main["variant"] == v) & (main["time"] > 0)]
        mine = table[(table["variant"] == v) & (table["time"] > 0)]
        sample = mine[mine["source"].isin(["gd", "continuation"])].sort_values("time")
        half = mine[mine["source"] == "population/2"]
        for ax, value in values:
            ax.plot(part["time"], part[value], color=colours[v], label=label)
            ax.plot(half["time"], half[value], color=colours[v], ls="--", lw=1)
            ax.plot(sample["time"], sample[value], color=colours[v], ls=":", lw=1)
        late = part[part["time"] >= 10]  # the envelope C / log t, C the largest loss * log t after t = 10
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
    loss_ax.set(yscale="log", ylabel="reduced loss (dash-dot: C / log t)")
    boundary_ax.set(ylabel="boundary r = 1 − ξ2/ξ1", ylim=(-1.05, 1.05))
    stuck_ax.set(yscale="log", ylabel="mass beyond r: P(t₍₁₎ < r)")
    late_mass = main.loc[main["time"] == main.groupby("variant")["time"].transform("max"), "stuck_mass"]
    if len(late_mass) and (late_mass > 0).all():  # from a decade below the end (earlier: e^-hundreds)
        stuck_ax.set_ylim(0.1 * float(late_mass.min()), 1.0)
    gap_ax.set_ylabel("ξ2 − ξ1")
    gap_ax.set_yscale("symlog", linthresh=1)
    overlap_ax.set_ylabel("ξ1: exact GD (dots) and gradient flow")
    for ax in axes.ravel():
        ax.set(xscale="log", xlabel="time t = η · step")
    return fig


#: the panels of the binary experiment: training-set loss, separated MSE to 1-NN, active distance to the family
BINARY = (
    ("train", "test_loss", "training loss (whole training set)", "log"),
    ("separated", "nn_mse", "MSE to the 1-NN predictor (separated)", "log"),
    ("train", "dist_family_active", "distance to the family (active blocks)", None),
)
#: figure name (the config's ``figure``) -> (table, style, group_by) -> figure; the training figures and
#: ``binary`` group their curves by ``group_by``, the others ignore it; convergence: per N in experiment 1,
#: distribution_shift: per K in experiment 3
FIGURES: dict[str, Callable[[pd.DataFrame, PlotStyle, Sequence[str]], plt.Figure]] = {
    "convergence": partial(bands, panels=(LOSS, SEPARATED_ACCURACY), width=1),
    "scaling_identity": scaling_identity,
    "distribution_shift": partial(bands, panels=(LOGIT, SEPARATED_ACCURACY, UNIFORM_ACCURACY), width=1.4),
    **{f.__name__: f for f in (number_of_classes, diagonal_init, loss_function, theorem_regime, sweep)},
    "binary": partial(bands, panels=BINARY, width=1.5, legends=False),
    **{f.__name__: f for f in (landscape, audit)},
}


def figure(name: str, table: pd.DataFrame, style: PlotStyle = STYLE, group_by: Sequence[str] = ()) -> plt.Figure:
    """Figure ``name`` of an experiment's table, its curves grouped by the settings ``group_by``, drawn in the
    style's seaborn context and laid out (``tight_layout``: saved, its labels are whole), as the workflow's."""
    if name not in FIGURES:
        raise ValueError(f"figure must be one of {', '.join(sorted(FIGURES))}; got {name!r}")
    with sns.plotting_context(style.context), sns.axes_style("whitegrid"):
        fig = FIGURES[name](table, style, list(group_by))
        for ax in fig.axes:
            plain_log_labels(ax.yaxis)
        fig.tight_layout()
    return fig
