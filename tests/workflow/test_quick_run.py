"""End to end: the quick preset through Snakemake in a temporary copy of the workflow; its tables, its headline
table and their provenance (its figures: test_figures.py)."""

import pandas as pd
import pytest

from onenn.base.io import load_json
from onenn.plan.experiments import PAPER_EXPERIMENTS
from tests.helpers import installed_versions, made_with, recorded
from tests.workflow.helpers import ROOT, snakemake


def test_quick_preset_table_has_every_seed_step_and_test_set(quick_run):
    import yaml

    quick = yaml.safe_load((ROOT / "workflow/presets/quick.yaml").read_text())["experiments"]["convergence"]
    table = pd.read_parquet(quick_run / "results/tables/convergence.parquet")
    for column in (
        "experiment",
        "variant",
        "seed",
        "step",
        "test_set",
        "N",
        "logit_error",
        "accuracy",
        "test_loss",
        "minibatch_loss",
        "xi1",
        "xi2",
        "dist_family",
        "dist_family_active",
        "label_norm",
        "device",
        "device_used",
        "gpu",
        "cuda",
        "diverged",
        "diverged_step",
    ):
        assert column in table, column
    assert (table["device"] == "auto").all() and table["device_used"].isin(["cpu", "cuda:0"]).all()
    assert not table["diverged"].any()
    assert table["seed"].dtype == "int64" and table["accuracy"].dtype == "float64"
    per_run = table.groupby(["N", "seed"]).size()
    n_eval = yaml.safe_load((ROOT / "workflow/presets/quick.yaml").read_text())["defaults"]["n_eval"]
    assert set(per_run.index.get_level_values("seed")) == set(range(quick["seeds"]))
    assert set(per_run.index.get_level_values("N")) == {16, 32, 64}
    steps = table.groupby(["N", "seed", "test_set"])["step"].agg(["min", "max", "nunique"])
    assert (steps["min"] == 0).all() and (steps["max"] == quick["steps"]).all() and (steps["nunique"] >= n_eval).all()
    assert set(table["test_set"]) == {"uniform", "separated"}
    assert table[["accuracy", "test_loss", "logit_error"]].notna().all().all()


#: the experiments beyond the paper's six, in config.yaml's order (docs/method.md §7, and Theorem 1's regime)
OURS = ("theorem_regime", "epsilon_2_seeds", "binary_sgd", "landscape", "audit")


def test_quick_preset_writes_the_headline_table(quick_run):
    summary = pd.read_parquet(quick_run / "results/tables/summary.parquet")
    assert list(dict.fromkeys(summary["experiment"])) == [*PAPER_EXPERIMENTS, *OURS]
    ratios = summary[summary["quantity"] == "ratio"]
    assert len(ratios) == 6 + 16 and ratios[["lower", "upper", "reference"]].notna().all().all()
    final = summary[(summary["quantity"] == "accuracy") & (summary["kind"] == "train")]
    assert (final["n"] == 2).all() and final["mean"].between(0, 1).all()
    label_end = summary[(summary["experiment"] == "diagonal_init") & (summary["quantity"] == "label_norm_end")]
    label_start = summary[(summary["experiment"] == "diagonal_init") & (summary["quantity"] == "label_norm_start")]
    assert label_end["mean"].to_numpy() == pytest.approx(label_start["mean"].to_numpy())  # label columns never move
    markdown = (quick_run / "results/tables/summary.md").read_text()
    assert all(f"## {e} (" in markdown for e in (*PAPER_EXPERIMENTS, *OURS))


def test_second_run_has_nothing_to_do(quick_run):
    again = snakemake(quick_run, "-n")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


def test_quick_preset_runs_the_beyond_experiments(quick_run):
    """The binary experiment, the landscape and the audit: tables and figures."""
    binary = pd.read_parquet(quick_run / "results/tables/binary_sgd.parquet")
    assert set(binary["test_set"]) == {"train", "uniform", "separated"}
    assert {"family_init", "N=16+d=4", "N=32+d=8"} <= set(binary["variant"])
    assert binary[["test_loss", "nn_mse", "dist_family_active"]].notna().all().all()
    audit = pd.read_parquet(quick_run / "results/tables/audit.parquet")
    assert set(audit["variant"]) == {"sigma=3", "sigma=theorem1", "sigma=lemma12"}
    assert set(audit["source"]) == {
        "gd",
        "flow",
        "continuation",
        "plain",
        "population",
        "population/2",
        "population_swap",
    }
    assert {"xi_ratio", "reduced_loss", "reduced_loss_se", "xi2_minus_xi1", "loss_log_time"} <= set(audit.columns)
    assert audit["sigma"].dtype == "float64" and set(audit["sigma_rule"]) == {"3.0", "theorem1", "lemma12"}
    landscape = pd.read_parquet(quick_run / "results/tables/landscape.parquet")
    assert landscape["reduced_loss"].between(0, 0.5).all()
    summary = pd.read_parquet(quick_run / "results/tables/summary.parquet")
    ratio_end = summary[(summary["experiment"] == "audit") & (summary["quantity"] == "xi_ratio_end")]
    assert len(ratio_end) == 3 and (ratio_end["reference"] - 7 / 15).abs().max() < 1e-12
    assert "Lemma 12's invariant" in (quick_run / "results/tables/summary.md").read_text()


def test_a_quick_run_records_the_versions_everywhere(quick_run):
    """Every run record (multiclass and binary), every run's rows in its experiment table and the headline table
    (Parquet and Markdown); test_report checks the report's page of it. The versions expected are the ones the
    modules report themselves (``__version__``, ``sys.version_info``): the code reads the installed metadata."""
    expected = installed_versions()
    records = sorted((quick_run / "results/runs").rglob("run.json"))
    assert records and any("binary" in p.as_posix() for p in records), records
    for path in records:
        assert recorded(load_json(path)) == expected, path
    run_tables = [pd.read_parquet(p) for p in (quick_run / "results/tables").glob("*.parquet")]
    run_tables = [t for t in run_tables if "seed" in t and "step" in t and "device_used" in t]
    assert run_tables
    for table in run_tables:
        assert all((table[key] == value).all() for key, value in expected.items())
    summary = pd.read_parquet(quick_run / "results/tables/summary.parquet")
    assert all((summary[key] == value).all() for key, value in expected.items())
    # the versions, then the code that made the table (test_provenance holds that part)
    assert (
        made_with(expected).removesuffix(".") + ", onenn code " in (quick_run / "results/tables/summary.md").read_text()
    )
