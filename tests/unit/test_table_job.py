"""The job of rule `table`: an experiment's table by its kind, concatenated from its runs' or variants' tables, or
computed from its settings."""

import logging

import numpy as np
import pandas as pd
import pytest

from onenn.base.columns import BINARY_RUN_METRICS, METRICS
from onenn.base.io import save_table
from onenn.jobs.tables import table_job
from onenn.plan.kinds import KINDS

LOG = logging.getLogger("test")


def run_table(variant: str, seed: int, metrics: tuple[str, ...]) -> pd.DataFrame:
    """Steps 0 and 10 on two test sets, in an order that is not the table's."""
    rows = [
        {"experiment": "e", "variant": variant, "seed": seed, "step": step, "test_set": test_set}
        | dict.fromkeys(metrics, 0.5)
        for step in (10, 0)
        for test_set in ("uniform", "separated")
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("kind", ["train", "binary"])
def test_runs_are_concatenated_in_experiment_variant_seed_step_test_set_order(tmp_path, kind):
    inputs = []
    for variant, seed in (("b", 1), ("a", 1), ("b", 0)):
        inputs.append(str(tmp_path / f"{variant}{seed}.parquet"))
        save_table(inputs[-1], run_table(variant, seed, METRICS if kind == "train" else BINARY_RUN_METRICS))
    table_job(kind, inputs, {}, experiment="e", output=str(tmp_path / "e.parquet"), log=LOG)
    table = pd.read_parquet(tmp_path / "e.parquet")
    keys = ["variant", "seed", "step", "test_set"]
    expected = [
        (v, s, step, t) for v, s in (("a", 1), ("b", 0), ("b", 1)) for step in (0, 10) for t in ("separated", "uniform")
    ]
    assert list(table[keys].itertuples(index=False, name=None)) == expected


def test_the_scaling_identity_is_computed_from_its_settings(tmp_path):
    """One row per (xi1, xi2) pair and K of each panel; the prediction is Lemma 2's (K−1)/K."""
    panels = {
        "by_K": {"xi": [[2, 5]], "K": [2, 5], "prompts": 200},
        "grid": {"xi": [[1, 2], [3, 6]], "K": [3], "prompts": 100},
    }
    settings = {"d": 4, "N": 8, "seed": 1, "ci_level": 0.9, "panels": panels}
    table_job("scaling", [], settings, experiment="s", output=str(tmp_path / "s.parquet"), log=LOG)
    table = pd.read_parquet(tmp_path / "s.parquet")
    points = [(p, a, b, K) for p, spec in panels.items() for a, b in spec["xi"] for K in spec["K"]]
    assert list(table[["panel", "xi1", "xi2", "K"]].itertuples(index=False, name=None)) == points
    np.testing.assert_allclose(table["reference"], [(K - 1) / K for *_, K in points], rtol=1e-15)
    assert (table["experiment"] == "s").all()


def test_the_landscape_is_computed_on_its_grid(tmp_path):
    settings = {"d": 4, "N": 8, "xi1_range": [0, 2], "xi2_range": [1, 3], "grid": 3, "prompts": 64, "seed": 0}
    table_job("landscape", [], settings, experiment="l", output=str(tmp_path / "l.parquet"), log=LOG)
    table = pd.read_parquet(tmp_path / "l.parquet")
    assert sorted(zip(table["xi1"], table["xi2"])) == [(a, b) for a in (0, 1, 2) for b in (1, 2, 3)]
    assert table["reduced_loss"].between(0, 1).all()  # per prompt 1/2 (sum q_j^2 - 2 q_i* + 1), with sum q_j^2 <= 1


def test_an_unknown_kind_is_named_with_the_allowed_ones(tmp_path):
    with pytest.raises(ValueError, match="kind must be one of " + ", ".join(KINDS) + "; got 'trian'"):
        table_job("trian", [], {}, experiment="e", output=str(tmp_path / "e.parquet"), log=LOG)
    assert not (tmp_path / "e.parquet").exists()
