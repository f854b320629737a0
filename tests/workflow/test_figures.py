"""The figures of a quick run show their experiment's table.

Two steps. The files, read as any viewer reads them: the PNG has the configuration's resolution, draws the
configuration's palette, one colour per group of variants (counted here from the table), and says what it
shows (its title and legends, which name the configuration's variants); the PDF is the same figure (its page is
the PNG's size at that resolution). The drawing: its legends name the variants of the configuration, and its
lines are the table's numbers (seed means computed here with pandas) or the papers' curves ((K−1)/K, 1/K,
ξ1 = (7/15) ξ2), computed here from their formulas.
"""

import json
import math
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import seaborn as sns
from PIL import Image

from onenn.analysis.plots import PlotStyle, figure
from onenn.plan import experiments as ex
from tests.configs import QUICK, load_config

CONFIG = load_config(*QUICK)
STYLE = PlotStyle(**CONFIG["plots"])
EXPERIMENTS = list(CONFIG["experiments"])


def figure_of(experiment: str) -> str:
    return CONFIG["experiments"][experiment]["figure"]


def table_of(quick_run: Path, experiment: str) -> pd.DataFrame:
    return pd.read_parquet(quick_run / f"results/tables/{experiment}.parquet")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def draw(quick_run: Path, experiment: str):
    """The figure as render() draws it (same seaborn context and style), kept open to be inspected."""
    with sns.plotting_context(STYLE.context), sns.axes_style("whitegrid"):
        return figure(figure_of(experiment), table_of(quick_run, experiment), STYLE, ex.group_by(CONFIG, experiment))


# --- the files ----------------------------------------------------------------------------------------------


def pdf_page(path: Path) -> tuple[float, float]:
    """The page size (points) of a one-page PDF."""
    data = path.read_bytes()
    assert data.startswith(b"%PDF-")
    (box,) = re.findall(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]", data)
    return float(box[0]), float(box[1])


def palette_levels(experiment: str, table: pd.DataFrame) -> int | None:
    """How many colours of the configured palette the figure draws, counted from the table: one per group of
    variants (per value of the setting they vary, or per variant when they vary several), per K of the grid (scaling_identity); diagonal_init's block-confined starts take colours of
    their own. None: a colour map (landscape)."""
    if experiment == "landscape":
        return None
    if experiment == "scaling_identity":
        return table.loc[table["panel"] == "grid", "K"].nunique()
    if experiment == "diagonal_init":
        return table.loc[table["noise_blocks"] == "all", "variant"].nunique()
    group_by = ex.group_by(CONFIG, experiment)
    return table[group_by[0]].nunique() if len(group_by) == 1 else table["variant"].nunique()


def pixels_of(rgb: np.ndarray, colour: tuple[float, float, float]) -> int:
    """How many pixels of an RGB image (0–255) have ``colour`` (0–1) to within rounding."""
    target = np.round(np.asarray(colour) * 255)
    return int((np.abs(rgb.astype(float) - target) <= 1).all(axis=-1).sum())


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_the_figure_files_show_the_experiment_in_the_configured_style(quick_run, experiment):
    png = Image.open(quick_run / f"results/figures/{experiment}.png")
    assert png.info["dpi"] == pytest.approx((STYLE.dpi, STYLE.dpi), rel=1e-3)
    group_by = ex.group_by(CONFIG, experiment)
    grouped = f", grouped by {', '.join(group_by)}" if group_by else ""
    assert png.text["Title"] == f"onenn figure {figure_of(experiment)}{grouped}"
    entries = {entry for legend in json.loads(png.text["Legends"]) for entry in legend["entries"]}
    assert legend_entries()[experiment] <= entries, sorted(legend_entries()[experiment] - entries)
    rgb = np.asarray(png.convert("RGB"))
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 50  # not a blank page
    levels = palette_levels(experiment, table_of(quick_run, experiment))
    if levels is not None:
        for colour in sns.color_palette(STYLE.palette, levels):
            assert pixels_of(rgb, colour) >= 4, f"{colour} of the palette {STYLE.palette!r} is not drawn"
    width, height = pdf_page(quick_run / f"results/figures/{experiment}.pdf")
    assert png.size == (round(width * STYLE.dpi / 72), round(height * STYLE.dpi / 72))  # the same figure


# --- the drawing ----------------------------------------------------------------------------------------------


def sweep(experiment: str, key: str) -> list:
    return CONFIG["experiments"][experiment]["sweep"][key]


def named_variants(experiment: str) -> list[str]:
    return [v["name"] for v in CONFIG["experiments"][experiment].get("variants", [])]


def audit_sigmas() -> list[str]:
    """The audit's sigmas as its variant names spell them (3.0 -> '3', theorem1, lemma12)."""
    return [f"{s:g}" if isinstance(s, float) else str(s) for s in sweep("audit", "sigma")]


def thresholds(N: int, d: int) -> dict[str, float]:
    """The named sigmas of the audit (docs/method.md §7.3): Theorem 1's explicit part and Lemma 12's bound."""
    theorem1 = 2 * max(math.log(N * d), -math.log(1 - (N * math.sqrt(d)) ** (-1 / d)))
    a = (2 * N * math.sqrt(d)) ** (-2 / (d - 3))
    return {"theorem1": theorem1, "lemma12": 3 * math.log(2 * N**4 * d / a)}


SIGMAS = thresholds(CONFIG["experiments"]["audit"]["N"], CONFIG["experiments"]["audit"]["d"])


#: how diagonal_init's legend names the blocks its block-confined variants perturb (`noise_blocks`)
CONFINED = {"label": "label columns", "other": "other blocks"}


def legend_entries() -> dict[str, set[str]]:
    """Per experiment, the legend entries its variants (or the paper's curves) must have, from the configuration
    (a new experiment fails below until it has its entry here)."""
    scaling = CONFIG["experiments"]["scaling_identity"]["panels"]
    binary = sweep("binary_sgd", "N"), sweep("binary_sgd", "d")
    return {
        "convergence": {str(n) for n in sweep("convergence", "N")},
        "theorem_regime": {str(s) for s in sweep("theorem_regime", "sigma")},
        "epsilon_2_seeds": set(ex.variants(CONFIG, "epsilon_2_seeds")),  # one variant: the legend names it
        "distribution_shift": {str(k) for k in sweep("distribution_shift", "K")},
        "number_of_classes": {str(k) for k in sweep("number_of_classes", "K")} | {"chance 1/K"},
        "diagonal_init": {f"ε={e:g}" for e in sweep("diagonal_init", "epsilon")}
        | {
            f"ε={v['epsilon']:g}, {CONFINED[v['noise_blocks']]}"
            for v in CONFIG["experiments"]["diagonal_init"]["variants"]
        },
        "loss_function": set(named_variants("loss_function")) | {"separated test set", "uniform test set"},
        "binary_sgd": {f"N={n}+d={d}" for n in binary[0] for d in binary[1]} | set(named_variants("binary_sgd")),
        "scaling_identity": {f"K={k}" for k in scaling["grid"]["K"]} | {"(K−1)/K", "measured"},
        "landscape": {"ξ1 = (7/15) ξ2"},
        "audit": {"7/15 (Lemma 12)", "1/2 (r = −1)"}
        | {f"sigma={s} (σ = {SIGMAS[s] if s in SIGMAS else float(s):.4g})" for s in audit_sigmas()},
    }


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_the_legends_name_the_configured_variants(quick_run, experiment):
    fig = draw(quick_run, experiment)
    entries = {t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()}
    expected = legend_entries()[experiment]
    assert expected <= entries, sorted(expected - entries)


def line(ax, label: str):
    (found,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return found


def test_convergence_lines_are_the_seed_means(quick_run):
    """Left: the loss on the uniform test set, right: the separated accuracy; one line per N, the mean over seeds."""
    table = table_of(quick_run, "convergence")
    fig = draw(quick_run, "convergence")
    for ax, test_set, metric in zip(fig.axes, ("uniform", "separated"), ("test_loss", "accuracy")):
        means = table[table["test_set"] == test_set].groupby(["N", "step"])[metric].mean()
        drawn = [ln for ln in ax.get_lines() if len(ln.get_xdata())]
        assert len(drawn) == len(sweep("convergence", "N"))
        for n, ln in zip(sorted(sweep("convergence", "N")), drawn):  # the legend's order: N ascending
            np.testing.assert_allclose(ln.get_xdata(), means[n].index, rtol=0)
            np.testing.assert_allclose(ln.get_ydata(), means[n].to_numpy(), rtol=1e-12)


def test_number_of_classes_draws_chance_at_one_over_K(quick_run):
    ax = draw(quick_run, "number_of_classes").axes[2]
    ks = sorted(sweep("number_of_classes", "K"))
    np.testing.assert_allclose(line(ax, "chance 1/K").get_ydata(), [1 / k for k in ks], rtol=1e-15)
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(k) for k in ks]


def test_scaling_identity_draws_lemma_2s_ratio(quick_run):
    """Left: the curve (K−1)/K over the configured K; right: (K−1)/K dashed for each K of the grid."""
    panels = CONFIG["experiments"]["scaling_identity"]["panels"]
    by_k_ax, grid_ax = draw(quick_run, "scaling_identity").axes
    curve = line(by_k_ax, "(K−1)/K")
    x = np.asarray(curve.get_xdata())
    assert (x.min(), x.max()) == (min(panels["by_K"]["K"]), max(panels["by_K"]["K"]))
    np.testing.assert_allclose(curve.get_ydata(), (x - 1) / x, rtol=1e-15)
    levels = sorted({ln.get_ydata()[0] for ln in grid_ax.get_lines() if ln.get_linestyle() == "--"})
    np.testing.assert_allclose(levels, sorted((k - 1) / k for k in panels["grid"]["K"]), rtol=1e-15)


def test_landscape_is_the_table_with_lemma_12s_line(quick_run):
    table = table_of(quick_run, "landscape")
    heat = draw(quick_run, "landscape").axes[0]
    bound = line(heat, "ξ1 = (7/15) ξ2")
    np.testing.assert_allclose(bound.get_ydata(), np.asarray(bound.get_xdata()) * 15 / 7, rtol=1e-15)
    (mesh,) = heat.collections
    xi1, xi2 = np.sort(table["xi1"].unique()), np.sort(table["xi2"].unique())
    expected = np.array(
        [[table.loc[(table["xi1"] == a) & (table["xi2"] == b), "reduced_loss"].item() for a in xi1] for b in xi2]
    )
    np.testing.assert_array_equal(np.asarray(mesh.get_array()).reshape(expected.shape), expected)


def test_audit_draws_lemma_12s_bound(quick_run):
    ratio_ax = draw(quick_run, "audit").axes[0]
    np.testing.assert_allclose(line(ratio_ax, "7/15 (Lemma 12)").get_ydata(), [7 / 15, 7 / 15], rtol=1e-15)
