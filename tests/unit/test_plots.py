"""Figures group their curves by the settings the experiment's variants vary (read from the config), and say so in
their legends: the paper's figures as before, ``sweep`` for any training experiment. Synthetic tables, no
training."""

import copy
import dataclasses
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import yaml
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import to_rgb
from matplotlib.lines import Line2D
from PIL import Image

from onenn.analysis.drawing import PlotStyle, grouping, plain_log_labels
from onenn.analysis.plots import FIGURES, figure
from onenn.analysis.tables import concat_tables
from onenn.base.columns import METRICS, TEST_SETS
from onenn.base.io import save_table
from onenn.jobs.figures import figure_job
from onenn.plan import experiments as ex
from onenn.plan import kinds
from onenn.plan.validate import check_config, load_schema

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
SCHEMA = load_schema(ROOT / "workflow/schemas/config.schema.yaml")
EXAMPLE = yaml.safe_load((ROOT / "workflow/examples/input_dimension.yaml").read_text())
STYLE = PlotStyle()
#: the columns of a run's table the figures draw
VALUES = (*METRICS, "minibatch_loss", "dist_family", "dist_family_active", "label_norm")


def with_experiment(**experiment) -> dict:
    config = copy.deepcopy(CONFIG)
    config["experiments"]["new"] = {"kind": "train", "figure": "sweep", **experiment}
    return config


def synthetic_table(config: dict, experiment: str, seeds: int = 2) -> pd.DataFrame:
    """An experiment's table as the workflow writes it (identity, metrics, resolved settings), random metrics."""
    rng = np.random.default_rng(0)
    rows = []
    for variant in ex.variants(config, experiment):
        s = ex.settings(config, experiment, variant)
        run = {k: s[k] for k in (*kinds.TRAIN_KEYS, *kinds.EVAL_KEYS)}
        for seed in range(seeds):
            for step in (0, 10, 100):
                for test_set in TEST_SETS:
                    metrics = dict(zip(VALUES, rng.uniform(0.05, 0.95, len(VALUES))))
                    rows.append(
                        {"experiment": experiment, "variant": variant, "seed": seed, "step": step}
                        | {"test_set": test_set, **metrics, **run}
                    )
    return concat_tables([pd.DataFrame(rows)])


def draw(config: dict, experiment: str) -> plt.Figure:
    table = synthetic_table(config, experiment)
    return figure(config["experiments"][experiment]["figure"], table, STYLE, ex.group_by(config, experiment))


def legend_of(ax: plt.Axes) -> tuple[str, list[str]]:
    legend = ax.get_legend()
    return legend.get_title().get_text(), [t.get_text() for t in legend.get_texts()]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# --- the grouping, from the config ----------------------------------------------------------------------------


def test_group_by_is_what_the_variants_vary_in_declared_order():
    assert {e: ex.group_by(CONFIG, e) for e in CONFIG["experiments"]} == {
        "convergence": ["N"],
        "scaling_identity": [],
        "distribution_shift": ["K"],
        "number_of_classes": ["K"],
        "diagonal_init": ["epsilon", "noise_blocks"],
        "loss_function": ["loss", "c"],
        "theorem_regime": ["sigma"],
        "epsilon_2_seeds": [],  # one variant: nothing varies
        "binary_sgd": ["N", "d", "sigma", "epsilon"],
        "landscape": [],
        "audit": ["sigma"],
    }
    # a sweep key with one value varies nothing; seeds is how many runs, not what a run does
    config = with_experiment(sweep={"d": [8], "sigma": [1.0, 3.0]}, variants=[{"sigma": 2.0, "seeds": 5}])
    assert ex.group_by(config, "new") == ["sigma"]


def test_every_training_figure_exists_and_has_a_caption():
    assert set(kinds.TRAIN_FIGURES) <= set(FIGURES)
    assert (ROOT / "workflow/report/figures/sweep.rst").exists()


# --- the paper's figures keep their layouts, grouped by the config ---------------------------------------------


@pytest.mark.parametrize(
    "experiment,title,entries",
    [
        ("convergence", "N", ["16", "32", "64"]),
        ("distribution_shift", "K", ["3", "5"]),
        ("number_of_classes", "K", ["2", "3", "5", "10"]),
        ("loss_function", "loss, c", ["c=0", "c=0.25", "c=0.5", "c=0.75", "c=1", "squentropy"]),
    ],
)
def test_paper_figures_group_by_their_sweep(experiment, title, entries):
    fig = draw(CONFIG, experiment)
    curves = [ax for ax in fig.axes if ax.get_xlabel() == "SGD step"]
    assert curves and all(legend_of(ax) == (title, entries) for ax in curves)


def test_number_of_classes_puts_chance_at_one_over_K():
    fig = draw(CONFIG, "number_of_classes")
    right = fig.axes[2]
    assert [t.get_text() for t in right.get_xticklabels()] == ["2", "3", "5", "10"] and right.get_xlabel() == "K"
    chance = next(line for line in right.get_lines() if line.get_label() == "chance 1/K")
    assert chance.get_ydata() == pytest.approx([1 / 2, 1 / 3, 1 / 5, 1 / 10])


def test_diagonal_init_labels_its_starts_as_before():
    fig = draw(CONFIG, "diagonal_init")
    acc, norm, _, active = fig.axes
    assert acc.get_xlabel() == "ε"
    assert legend_of(acc)[1] == ["noise in all blocks", "noise in label blocks", "noise in other blocks"]
    starts = ["ε=0", "ε=0.1", "ε=0.3", "ε=0.5", "ε=1", "ε=2", "ε=3", "ε=3, label columns", "ε=3, other blocks"]
    assert [t.get_text() for t in norm.get_xticklabels()] == starts
    assert legend_of(active) == ("epsilon, noise_blocks", starts)


# --- the generic figure ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key,values,entries",
    [("d", [4, 8, 16], ["4", "8", "16"]), ("sigma", [1.0, 3.0], ["1.0", "3.0"]), ("lr", [0.01, 0.1], ["0.01", "0.1"])],
)
def test_sweep_groups_by_the_swept_setting_and_draws_final_values_against_it(key, values, entries):
    fig = draw(with_experiment(sweep={key: values}), "new")
    top, bottom = fig.axes[:3], fig.axes[3:]
    assert legend_of(top[0]) == (key, entries)
    assert all(ax.get_legend() is None for ax in top[1:])
    assert len(bottom) == 3
    for ax in bottom:  # final values against the setting: one point per value
        assert sorted(x for bars in ax.containers for x in bars.lines[0].get_xdata()) == pytest.approx(values)
        assert ax.get_xlabel() == {"sigma": "σ", "lr": "η"}.get(key, key)


def test_the_worked_example_groups_by_d():
    config = copy.deepcopy(CONFIG)
    config["experiments"].update(EXAMPLE["experiments"])
    assert check_config(config, SCHEMA) == []
    assert ex.group_by(config, "input_dimension") == ["d"]
    assert legend_of(draw(config, "input_dimension").axes[0]) == ("d", ["4", "8", "16"])


def test_sweep_over_two_settings_names_both_and_draws_a_series_per_value_of_the_second():
    fig = draw(with_experiment(sweep={"d": [4, 8], "N": [8, 16]}), "new")
    assert legend_of(fig.axes[0]) == ("d, N", ["d=4+N=8", "d=4+N=16", "d=8+N=8", "d=8+N=16"])
    assert legend_of(fig.axes[3]) == ("N", ["N=8", "N=16"])


def test_sweep_of_a_text_setting_has_no_final_row():
    fig = draw(with_experiment(sweep={"loss": ["square", "squentropy"]}), "new")
    assert len(fig.axes) == 3 and legend_of(fig.axes[0]) == ("loss", ["square", "squentropy"])


def test_one_variant_is_drawn_as_itself():
    fig = draw(with_experiment(steps=100), "new")
    assert len(fig.axes) == 3 and legend_of(fig.axes[0]) == ("variant", ["default"])


def test_a_grouping_the_table_lacks_is_a_clear_error():
    table = synthetic_table(CONFIG, "convergence")
    with pytest.raises(ValueError, match="cannot group the curves by width: not a column"):
        grouping(table, ["width"])


def test_the_figure_job_records_the_legends_in_the_png_and_draws_the_same_bytes_twice(tmp_path):
    config = with_experiment(sweep={"d": [4, 8, 16]})
    save_table(tmp_path / "new.parquet", synthetic_table(config, "new"))
    style = {f.name: getattr(STYLE, f.name) for f in dataclasses.fields(STYLE)}
    drawn = []
    for run in ("a", "b"):
        outputs = [tmp_path / run / "new.png", tmp_path / run / "new.pdf", tmp_path / run / "new.svg"]
        figure_job("sweep", str(tmp_path / "new.parquet"), style, [str(o) for o in outputs],
                   group_by=ex.group_by(config, "new"), log=logging.getLogger("test"))  # fmt: skip
        drawn.append([o.read_bytes() for o in outputs])
    text = Image.open(tmp_path / "a/new.png").text
    assert text["Title"] == "onenn figure sweep, grouped by d"
    assert json.loads(text["Legends"])[0] == {"title": "d", "entries": ["4", "8", "16"]}
    _, pdf, svg = drawn[0]
    assert pdf.startswith(b"%PDF") and b"CreationDate" not in pdf and b"<dc:date>" not in svg
    assert drawn[0] == drawn[1]


# --- caught before any job ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("experiment", "figure", "kind", "theirs"),
    [("binary_sgd", "sweep", "train", "binary"), ("convergence", "landscape", "landscape", "train"),
     ("audit", "scaling_identity", "scaling", "audit"), ("landscape", "audit", "audit", "landscape")],
)  # fmt: skip
def test_a_figure_of_another_kind_is_a_config_error(experiment, figure, kind, theirs):
    config = copy.deepcopy(CONFIG)
    config["experiments"][experiment]["figure"] = figure
    (problem,) = check_config(config, SCHEMA)
    assert str(problem).startswith(
        f"experiments.{experiment}.figure: figure {figure!r} draws experiments of kind {kind!r}, "
        f"but experiments.{experiment} has kind {theirs!r} (its figures: "
    )


def test_variants_that_vary_nothing_to_group_by_are_a_config_error_naming_the_experiment():
    config = with_experiment(variants=[{"name": "few", "seeds": 2}, {"name": "many", "seeds": 4}])
    problems = [str(p) for p in check_config(config, SCHEMA)]
    assert problems == [
        (
            "experiments.new.figure: figure 'sweep' groups its curves by the settings the variants vary, but the 2 "
            "variants of experiments.new vary none it can group by (only seeds); sweep or vary a setting, or merge "
            "the variants"
        )
    ]
    assert check_config(with_experiment(steps=100), SCHEMA) == []  # one variant: drawn as itself


# --- one variant, one look: the same colour and marker in every panel -----------------------------------------

#: the settings of a hand-made run where a variant does not set them
RUN = {"d": 8, "N": 16, "K": 3, "loss": "square", "c": 0.0, "epsilon": 0.0, "noise_blocks": "all", "sigma": 3.0}
#: every metric of the i-th variant at every step, seed and test set: a line or a point drawn at this height (or at
#: it times (K−1)/K's inverse, Lemma 2's factor, in the class-scaled panel) is that variant's
HEIGHTS = (0.11, 0.23, 0.37, 0.52, 0.68)
LOOK_METRICS = (*VALUES, "nn_mse")


def constant_table(variants: dict[str, dict], test_sets: tuple[str, ...] = ("uniform", "separated")) -> pd.DataFrame:
    """A table by hand: the variants' settings over ``RUN``, two seeds, three steps, every metric the variant's
    height."""
    rows = [
        {"experiment": "e", "variant": name, "seed": seed, "step": step, "test_set": test_set}
        | dict.fromkeys(LOOK_METRICS, height)
        | RUN
        | settings
        for (name, settings), height in zip(variants.items(), HEIGHTS, strict=False)
        for seed in (0, 1)
        for step in (0, 10, 100)
        for test_set in test_sets
    ]
    return concat_tables([pd.DataFrame(rows)])


def heights(table: pd.DataFrame) -> dict[str, set[float]]:
    """Where each variant's lines and points may lie: its height, and that over (K−1)/K."""
    out = {}
    for variant, row in table.drop_duplicates("variant").set_index("variant").iterrows():
        out[variant] = {row["accuracy"], row["accuracy"] * row["K"] / (row["K"] - 1)}
    every = [h for hs in out.values() for h in hs]
    assert len(every) == len(set(every)), "the hand-made heights must tell the variants apart"
    return out


def owner(y, places: dict[str, set[float]]) -> str | None:
    """The variant whose height every point of ``y`` lies at, if one does."""
    y = np.asarray(y, dtype=float)
    found = [v for v, hs in places.items() if len(y) and any(np.allclose(y, h, rtol=1e-9) for h in hs)]
    return found[0] if found else None


def drawn_looks(fig: plt.Figure, places: dict[str, set[float]]) -> dict[str, list[tuple[int, tuple, str | None]]]:
    """Per variant, (axes, colour, marker) of every artist drawn at its height: lines and markers (``Line2D``; the
    caps of error bars left out), the bars of error bars (``LineCollection``) and the bands (``PolyCollection``),
    which have a colour and no marker."""
    found: dict[str, list] = {v: [] for v in places}
    for i, ax in enumerate(fig.axes):
        caps = {id(cap) for bars in ax.containers for cap in bars.lines[1]}
        for line in ax.get_lines():
            v = owner(line.get_ydata(), places) if id(line) not in caps else None
            if v:
                found[v].append((i, to_rgb(line.get_color()), line.get_marker()))
        for collection in ax.collections:
            if isinstance(collection, LineCollection | PolyCollection) and collection.get_paths():
                y = np.concatenate([p.vertices[:, 1] for p in collection.get_paths()])
                colours = (
                    collection.get_edgecolor() if isinstance(collection, LineCollection) else collection.get_facecolor()
                )
                v = owner(y, places)
                if v and len(colours):
                    found[v].append((i, to_rgb(colours[0]), None))
    return found


SWEEP_FOUR = {  # the variants the problem was found with: tiny, sq, mix, wide; d orders them unlike N, K, loss
    "tiny": {"d": 4, "N": 4, "K": 2, "loss": "square"},
    "sq": {"d": 16, "N": 16, "K": 3, "loss": "squentropy"},
    "mix": {"d": 8, "N": 16, "K": 3, "loss": "mixture", "c": 0.5},
    "wide": {"d": 32, "N": 8, "K": 3, "loss": "square"},
}
LOOK_CASES = {
    "sweep, four settings": ("sweep", SWEEP_FOUR, ["d", "N", "K", "loss"], ("uniform", "separated")),
    "sweep, one setting": ("sweep", {f"d={d}": {"d": d} for d in (4, 8, 16)}, ["d"], ("uniform", "separated")),
    "sweep, two settings": (
        "sweep",
        {f"d={d}+N={n}": {"d": d, "N": n} for d in (4, 8) for n in (8, 16)},
        ["d", "N"],
        ("uniform", "separated"),
    ),
    "convergence": ("convergence", {f"N={n}": {"N": n} for n in (16, 32, 64)}, ["N"], ("uniform", "separated")),
    "distribution_shift": ("distribution_shift", {f"K={k}": {"K": k} for k in (3, 5)}, ["K"], ("uniform", "separated")),
    "number_of_classes": (
        "number_of_classes",
        {f"K={k}": {"K": k} for k in (2, 3, 5)},
        ["K"],
        ("uniform", "separated"),
    ),
    "loss_function": (
        "loss_function",
        {"square": {}, "c=0.5": {"loss": "mixture", "c": 0.5}, "squentropy": {"loss": "squentropy"}},
        ["loss", "c"],
        ("uniform", "separated"),
    ),
    "diagonal_init": (
        "diagonal_init",
        {
            "eps=0": {},
            "eps=0.5": {"epsilon": 0.5},
            "eps=3": {"epsilon": 3.0},
            "eps=3,label": {"epsilon": 3.0, "noise_blocks": "label"},
            "eps=3,other": {"epsilon": 3.0, "noise_blocks": "other"},
        },
        ["epsilon", "noise_blocks"],
        ("uniform", "separated"),
    ),
    "binary": ("binary", {f"N={n}": {"N": n} for n in (4, 8)}, ["N"], ("train", "separated")),
}


@pytest.mark.parametrize("case", list(LOOK_CASES))
def test_a_variant_has_one_colour_and_one_marker_in_every_panel(case):
    """Each variant is found, by the height of its hand-made numbers, in every panel, always in one colour and
    one marker (a real one: variants of like colours differ in shape), and no two variants look alike."""
    name, variants, group_by, test_sets = LOOK_CASES[case]
    table = constant_table(variants, test_sets)
    places = heights(table)
    fig = figure(name, table, STYLE, group_by)
    found = drawn_looks(fig, places)
    looks = {}
    for variant, drawn in found.items():
        assert {i for i, _, _ in drawn} == set(range(len(fig.axes))), f"{variant} is missing from a panel"
        colours = {colour for _, colour, _ in drawn}
        markers = {marker for _, _, marker in drawn if marker is not None}
        assert len(colours) == 1, f"{variant} is drawn in {len(colours)} colours: {sorted(colours)}"
        assert len(markers) == 1 and markers <= set(Line2D.filled_markers), f"{variant} has markers {markers}"
        looks[variant] = (colours.pop(), markers.pop())
    assert len(set(looks.values())) == len(looks), looks


# --- in a notebook: the library leaves the backend alone, and a figure saved plainly is whole ---------------------

KEEPS_THE_BACKEND = """
import matplotlib
matplotlib.use("svg")  # any backend but Agg, as Jupyter's inline one
import onenn.analysis.inequalities_page, onenn.analysis.plots
print(matplotlib.get_backend())
"""


def test_importing_the_figures_leaves_matplotlibs_backend_as_it_was():
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    out = subprocess.run(
        [sys.executable, "-c", KEEPS_THE_BACKEND], check=False, cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["svg"]


def test_a_figure_comes_laid_out_its_labels_inside_it():
    """Without a style (the default) and saved without ``bbox_inches``, every axis label lies inside the figure."""
    fig = figure("sweep", synthetic_table(with_experiment(sweep={"d": [4, 8]}), "new"), group_by=["d"])
    renderer = fig.canvas.get_renderer()
    labels = [text for ax in fig.axes for text in (ax.xaxis.label, ax.yaxis.label) if text.get_text()]
    assert "SGD step" in {text.get_text() for text in labels}
    for text in labels:
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1, text.get_text()
    plt.close(fig)


@pytest.mark.parametrize(("low", "high", "plain"), [(0.17, 0.45, True), (0.385, 0.39, True), (1e-4, 0.3, False)])
def test_a_log_axis_under_two_decades_reads_in_decimals(low, high, plain):
    """Under a factor 100 every label is the tick's value in decimals (0.2, not 2×10⁻¹); wider, matplotlib's own."""
    fig, ax = plt.subplots()
    ax.set_yscale("log")
    ax.set_ylim(low, high)
    fig.canvas.draw()
    before = [(t.get_position()[1], t.get_text()) for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels()]
    plain_log_labels(ax.yaxis)
    fig.canvas.draw()
    after = [(t.get_position()[1], t.get_text()) for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels()]
    plt.close(fig)
    assert [bool(text) for _, text in after] == [bool(text) for _, text in before]  # the same ticks carry a label
    shown = [(y, text) for y, text in after if text and low <= y <= high]
    assert shown  # the view has labelled ticks
    if plain:
        assert all(float(text) == pytest.approx(y, rel=5e-3) and "10^" not in text for y, text in shown)
    else:
        assert after == before
