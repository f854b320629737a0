"""The headline table (onenn.analysis.summary) on small tables whose statistics are known by hand."""

import numpy as np
import pandas as pd
import pytest

from onenn.analysis.summary import (
    binary_markdown,
    binary_summary,
    landscape_summary,
    scaling_markdown,
    scaling_summary,
    summarise,
    to_markdown,
    train_markdown,
    train_summary,
    values_markdown,
)
from onenn.analysis.tables import first_and_last, variant_order
from tests.helpers import scaling_table, train_table


@pytest.fixture
def summary() -> pd.DataFrame:
    return summarise({"e": train_table(), "s": scaling_table()}, {"e": train_summary, "s": scaling_summary})


def pick(summary, experiment, variant, quantity, test_set=None):
    rows = summary[
        (summary["experiment"] == experiment) & (summary["variant"] == variant) & (summary["quantity"] == quantity)
    ]
    rows = rows[rows["test_set"].isna()] if test_set is None else rows[rows["test_set"] == test_set]
    assert len(rows) == 1, (variant, quantity, test_set)
    return rows.iloc[0]


def test_final_metrics_are_mean_sd_and_n_over_seeds(summary):
    acc = pick(summary, "e", "K=2", "accuracy", "separated")
    assert (acc["mean"], acc["sd"], acc["n"]) == (pytest.approx(0.7), pytest.approx(0.2), 3)
    assert pick(summary, "e", "K=2", "accuracy", "uniform")["sd"] == pytest.approx(0.0)
    assert pick(summary, "e", "K=10", "test_loss", "uniform")["mean"] == pytest.approx(2.5)
    assert pick(summary, "e", "K=2", "minibatch_loss")["mean"] == pytest.approx(1.0)


def test_parameters_at_start_and_end_and_their_per_seed_ratio(summary):
    assert pick(summary, "e", "K=2", "dist_family_start")["mean"] == pytest.approx(2.0)
    end = pick(summary, "e", "K=2", "dist_family_end")
    assert (end["mean"], end["sd"]) == (pytest.approx(2.0), pytest.approx(1.0))
    ratio = pick(summary, "e", "K=2", "dist_family_ratio")
    assert (ratio["mean"], ratio["sd"]) == (pytest.approx(1.0), pytest.approx(0.5))
    assert pick(summary, "e", "K=2", "label_norm_end")["mean"] == pytest.approx(4.0)
    # a distance that starts at 0 has no ratio
    assert summary[(summary["quantity"] == "dist_family_active_ratio")].empty


def test_scaling_ratios_keep_their_interval_next_to_the_prediction(summary):
    r = pick(summary, "s", "panel=grid+xi1=1+xi2=2+K=10", "ratio")
    assert (r["mean"], r["se"], r["lower"], r["upper"], r["reference"], r["n"]) == (0.91, 0.02, 0.87, 0.95, 0.9, 400)
    assert r["kind"] == "scaling" and r["panel"] == "grid" and r["K"] == 10
    assert pick(summary, "s", "panel=by_K+xi1=2+xi2=5+K=3", "L_bin")["se"] == 0.01


def test_variants_are_in_numeric_order_and_types_are_stable(summary):
    assert list(dict.fromkeys(summary.loc[summary["experiment"] == "e", "variant"])) == ["K=2", "K=10"]
    assert variant_order(train_table()) == ["K=2", "K=10"]
    assert summary["n"].dtype == "int64" and summary["mean"].dtype == "float64"
    assert summary["test_set"].dtype == "string"


def test_markdown_shows_every_experiment_and_the_perturbed_parameters(summary):
    md = to_markdown(summary, {"train": train_markdown, "scaling": scaling_markdown})
    assert "## e (train)" in md and "## s (scaling)" in md
    assert "| K=2 | 3 | 0.7 ± 0.2 |" in md
    assert "distance start" in md  # the distance starts above 0: the parameter table is shown
    assert "| grid | 1 | 2 | 10 | 400 | 0.3000 ± 0.0200 | 0.3300 ± 0.0200 | 0.9100 [0.8700, 0.9500] | 0.9000 |" in md


def test_the_scaling_table_prints_K_as_an_integer_beside_a_kind_without_K():
    """An experiment without the column K (here a landscape) leaves K missing in its rows: the summary's K is
    then a float column, and the scaling table still prints K = 10 as 10."""
    landscape = pd.DataFrame(
        {"experiment": "l", "xi1": [1.0, 2.0], "xi2": [3.0, 4.0], "reduced_loss": [0.5, 0.25], "reduced_loss_se": 0.01}
    )
    summary = summarise({"s": scaling_table(), "l": landscape}, {"s": scaling_summary, "l": landscape_summary})
    assert summary["K"].isna().any()
    renderers = {"scaling": scaling_markdown, "landscape": values_markdown}
    assert "| grid | 1 | 2 | 10 | 400 |" in to_markdown(summary, renderers)


def test_first_and_last_per_run():
    ends = first_and_last(train_table(), "dist_family")
    assert len(ends) == 6
    np.testing.assert_allclose(ends.sort_values(["variant", "seed"])["ratio"], [0.5, 1.0, 1.5] * 2)


def test_bad_kind_and_mismatched_table_are_rejected():
    with pytest.raises(ValueError, match="no summariser given for experiment 'e'"):
        summarise({"e": train_table()}, {"x": train_summary})
    with pytest.raises(ValueError, match="the table given for experiment 'x' holds experiments"):
        summarise({"x": train_table()}, {"x": train_summary})


def test_binary_rows_are_the_last_steps_mean_sd_over_seeds_and_its_parameters_have_no_test_set():
    """Two seeds at steps 0 and 10: the metrics per prompt set and xi1 on the training set at step 10."""
    rows = []
    for seed, loss in ((0, 0.2), (1, 0.4)):
        for step in (0, 10):
            for test_set in ("train", "uniform", "separated"):
                late = step == 10
                rows.append(
                    {"experiment": "b", "variant": "default", "seed": seed, "step": step, "test_set": test_set}
                    | {"test_loss": loss if late else 9.0, "nn_mse": 0.1 * (seed + 1) if late else 9.0}
                    | {"dist_family_active": 0.0, "xi1": 1.0 + seed if late else 9.0, "xi2": 3.0}
                )
    out = binary_summary(pd.DataFrame(rows))
    loss = out[(out["quantity"] == "test_loss") & (out["test_set"] == "train")].iloc[0]
    assert (loss["mean"], loss["sd"], loss["n"]) == (pytest.approx(0.3), pytest.approx(0.2 / 2**0.5), 2)
    mse = out[(out["quantity"] == "nn_mse") & (out["test_set"] == "separated")].iloc[0]
    assert mse["mean"] == pytest.approx(0.15)
    xi1 = out[out["quantity"] == "xi1"]
    assert len(xi1) == 1 and xi1["test_set"].isna().all() and xi1["mean"].iloc[0] == pytest.approx(1.5)
    assert set(out["kind"]) == {"binary"} and len(out) == 6
    md = "\n".join(binary_markdown(out))
    assert "| default | 2 | 0.3 ± 0.14 | 0.15 ± 0.071 | 0.15 ± 0.071 | 0 ± 0 | 1.5 ± 0.71 | 3 ± 0 |" in md
