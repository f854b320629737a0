"""onenn.api, the package from Python (docs/guide.md#the-python-api): its tables are the workflow's, its settings are checked as the
configuration is, and it calls the same code as the jobs."""

import dataclasses
import inspect
import logging

import numpy as np
import pandas as pd
import pytest
import yaml

import onenn
from onenn import api
from onenn.analysis.tables import concat_tables
from onenn.base.io import DamagedFile, load_table, save_json, save_table
from onenn.jobs import datasets
from onenn.jobs.evaluate import evaluate_job
from onenn.jobs.train import train_job
from onenn.plan.kinds import TRAIN_KEYS
from onenn.plan.validate import ConfigError, validate_config
from tests.configs import ROOT

#: one small setting: a few seconds on one core
SMALL = {"d": 3, "N": 4, "K": 3, "steps": 40, "n_eval": 4, "batch": 16, "test_size": 64, "device": "cpu"}


@pytest.fixture(scope="module")
def trained():
    return api.train(**SMALL, loss="cross_entropy", seed=[0, 1], experiment="small", variant="v")


def test_the_metrics_are_the_workflows(trained, tmp_path):
    """For the same settings and seeds, evaluate's table is, column for column and number for number, what the
    workflow writes: test_set_job, train_job and evaluate_job as its rules call them (their wildcards are
    strings), on files here, give each run's metrics.parquet, and the table job concatenates them."""
    log = logging.getLogger("test")
    settings = {**api.default_settings(), **SMALL, "loss": "cross_entropy"}
    test_seed = 20240917  # config.yaml's test_sets.seed
    sets = {"uniform": str(tmp_path / "uniform.npz"), "separated": str(tmp_path / "separated.npz")}
    for name, delta in (("uniform", None), ("separated", 0.1)):
        datasets.test_set_job(name, 64, 3, 4, 3, delta, test_seed, sets[name], log)
    runs = []
    for seed in (0, 1):
        folder = tmp_path / f"seed{seed}"
        folder.mkdir()
        identity = {"experiment": "small", "variant": "v", "seed": str(seed)}
        train_job({k: settings[k] for k in TRAIN_KEYS} | {"seed": seed}, identity=identity,
                  weights_path=str(folder / "weights.npz"), run_path=str(folder / "run.json"), threads=1, log=log)  # fmt: skip
        evaluate_job({"K": 3, "loss": "cross_entropy", "c": 0.0, "delta": 0.1, "test_size": 64}, identity=identity,
                     weights_path=str(folder / "weights.npz"), run_path=str(folder / "run.json"),
                     test_set_paths=sets, output=str(folder / "metrics.parquet"), log=log)  # fmt: skip
        runs.append(load_table(folder / "metrics.parquet"))
    one = api.evaluate(dataclasses.replace(trained, runs=(trained.run(1),)))
    pd.testing.assert_frame_equal(one, runs[1], check_exact=True)
    pd.testing.assert_frame_equal(api.evaluate(trained), concat_tables(runs), check_exact=True)
    separated = api.evaluate(trained, test_set="separated")
    assert set(separated["test_set"]) == {"separated"} and len(separated) == len(runs[0])


def test_train_holds_the_weights_the_loss_and_the_resolved_settings(trained):
    run = trained.run(1)
    assert trained.seeds == [0, 1] and run.seed == 1 and run.record["seed"] == 1
    assert run.W.shape == (4, 3 + 3 + 1, 3 + 3 + 1) and run.saved_steps[0] == 0 and run.saved_steps[-1] == 40
    assert run.minibatch_loss.shape == (40,) and np.isfinite(run.minibatch_loss).all()
    assert trained.settings["steps"] == 40 and trained.settings["lr"] == 0.05 and trained.settings["seeds"] == 2
    assert np.array_equal(run.W[0], np.diag([0.0] * 6 + [-3.0]))  # W0 = diag(0, -sigma), sigma's default 3
    with pytest.raises(KeyError, match="no run of seed 5"):
        trained.run(5)


def test_the_defaults_are_the_configs():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert api.default_settings() == config["defaults"]


def test_bad_settings_get_the_configs_messages():
    """The same keys wrong in config.yaml, checked by the Snakefile's check, give the same problems."""
    bad = {"lr": -1, "sigma": "x", "N": 16.0}
    with pytest.raises(ConfigError) as ours:
        api.train(**bad, experiment="mine")
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["experiments"]["mine"] = {"kind": "train", "figure": "sweep", **bad}
    with pytest.raises(ConfigError) as theirs:
        validate_config(config, ROOT / "workflow/schemas/config.schema.yaml")
    assert [str(p) for p in ours.value.problems] == [str(p) for p in theirs.value.problems]
    assert "experiments.mine.lr: -1 is less than or equal to the minimum of 0" in str(ours.value)
    with pytest.raises(ConfigError, match="c=0.5 is used only by loss 'mixture'"):
        api.train(c=0.5)
    with pytest.raises(TypeError, match="'kind' is not a run setting"):
        api.train(kind="binary")


def test_unknown_settings_are_named_with_the_settings_train_accepts():
    with pytest.raises(ConfigError) as err:
        api.train(n_record=4, stepz=10)
    assert [p.location for p in err.value.problems] == ["n_record", "stepz"]
    assert "unknown setting 'n_record'; it was renamed to 'n_eval'" in str(err.value)
    assert "unknown setting 'stepz'; did you mean 'steps'? (allowed: K, N, batch" in str(err.value)
    assert "figure" not in str(err.value) and "sweep" not in str(err.value)  # keys of a config, not of train


def test_help_lists_every_setting_with_its_default_and_the_record_says_what_was_trained():
    parameters = inspect.signature(onenn.train).parameters
    assert {k: parameters[k].default for k in api.default_settings()} == api.default_settings()
    result = api.train(**SMALL, seeds=1, seed=[0, 1], progress=False)
    assert result.seeds == [0, 1] and result.settings["seeds"] == 2


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"variant": "../../x"}, "variant: variant name '../../x' is not a valid folder name (^[A-Za-z0-9]"),
        ({"variant": "a\n"}, "variant: variant name 'a\\n' is not a valid folder name"),
        ({"experiment": "../x"}, "invalid name '../x': must match ^[a-z]"),
        ({"threads": 0}, "threads: must be a positive integer; got 0"),
        ({"threads": -3}, "threads: must be a positive integer; got -3"),
    ],
)
def test_names_and_threads_are_checked_as_the_workflow_checks_them(arguments, problem):
    with pytest.raises(ConfigError, match="invalid (arguments|configuration)") as err:
        api.train(**SMALL, **arguments)
    assert problem in str(err.value)


def test_load_reads_a_finished_runs_files(trained, tmp_path):
    table = api.evaluate(trained)
    results = tmp_path / "results"
    save_table(results / "tables/small.parquet", table)
    card = pd.DataFrame({"claim": ["a"], "verdict": ["holds"]})
    save_table(results / "tables/claims.parquet", card)
    for run in trained.runs:
        save_json(results / f"runs/small/v/seed{run.seed}/run.json", run.record)
    loaded = api.load(results)
    assert list(loaded.tables) == ["small"] and loaded.summary is None
    pd.testing.assert_frame_equal(loaded.tables["small"], table)
    pd.testing.assert_frame_equal(loaded.scorecard, card)
    assert loaded.runs["seed"].tolist() == [0, 1] and (loaded.runs["steps"] == 40).all()
    assert list(api.load(results, experiment="small").tables) == ["small"]
    with pytest.raises(FileNotFoundError):
        api.load(tmp_path / "nowhere")
    outside = "../../../elsewhere/t"
    with pytest.raises(ConfigError, match=f"experiment: experiment name '{outside}' is not a valid folder name"):
        api.load(results, experiment=outside)
    with pytest.raises(ConfigError, match="and not summary or claims"):
        api.load(results, experiment="claims")
    save_table(results / "tables/other.parquet", pd.DataFrame({"x": [1.0]}))  # foreign: no experiment column
    with pytest.raises(DamagedFile, match="the column 'experiment' is missing"):
        api.load(results, experiment="other")
    save_table(results / "tables/other.parquet", table)  # small's table under another name
    with pytest.raises(DamagedFile, match="it holds experiment small, not 'other'"):
        api.load(results, experiment="other")


@pytest.fixture(scope="module")
def unnamed():
    """Three unnamed results (variant ``default``), one seed each: lr 0.05 and 0.2 at d = 3, lr 0.05 at d = 4."""
    return [api.train(**(SMALL | s), seed=0, progress=False) for s in ({}, {"lr": 0.2}, {"d": 4})]


def test_unnamed_results_that_differ_in_a_setting_are_named_by_it_never_pooled(unnamed, caplog):
    """Pooled, lr 0.05 and 0.2 would be two seeds of ``default``: they are variants ``lr=0.05`` and ``lr=0.2``,
    each with its own run's rows, as the workflow names a sweep over lr; with d too, both settings name them."""
    low, high, _ = unnamed
    table = api.evaluate([low, high])
    assert "api: the unnamed results differ in lr: variants lr=0.05, lr=0.2" in caplog.text
    assert table.groupby("variant")["lr"].unique().to_dict() == {"lr=0.05": [0.05], "lr=0.2": [0.2]}
    for result, name in ((low, "lr=0.05"), (high, "lr=0.2")):
        mine = table[table["variant"] == name].drop(columns="variant").reset_index(drop=True)
        alone = concat_tables([api.evaluate(result)]).drop(columns="variant")  # in the table's order
        pd.testing.assert_frame_equal(mine, alone, check_exact=True)
    assert low.variant == "default"  # the results given are left as they were
    three = api.evaluate(unnamed).drop_duplicates("variant").set_index("variant")[["d", "lr"]]
    assert three.to_dict("index") == {
        "d=3+lr=0.05": {"d": 3, "lr": 0.05},
        "d=3+lr=0.2": {"d": 3, "lr": 0.2},
        "d=4+lr=0.05": {"d": 4, "lr": 0.05},
    }


def test_named_results_that_differ_or_repeat_a_seed_are_refused(unnamed):
    low, high, wide = unnamed
    with pytest.raises(
        ConfigError, match=r"variant 'v' differ in lr: name each, train\(\.\.\., variant=\.\.\.\): lr=0.05, lr=0.2$"
    ):
        api.evaluate([dataclasses.replace(low, variant="v"), dataclasses.replace(high, variant="v")])
    with pytest.raises(ConfigError, match=r"variant 'lr=0.2' differ in d, lr: .*: d=3\+lr=0.2, d=4\+lr=0.05$"):
        api.evaluate([low, high, dataclasses.replace(wide, variant="lr=0.2")])  # a name as the unnamed get
    with pytest.raises(ConfigError, match=r"the results of variant 'default' repeat a seed: \[0, 0\]"):
        api.evaluate([low, low])


def test_seeds_of_one_setting_in_several_results_are_pooled(trained):
    """The same settings and variant, seed 0 and seed 1 trained apart: one variant of two seeds, as one call."""
    apart = [dataclasses.replace(trained, runs=(run,)) for run in trained.runs]
    pd.testing.assert_frame_equal(api.evaluate(apart), api.evaluate(trained), check_exact=True)
    assert set(api.evaluate(apart)["variant"]) == {"v"}


def test_the_family_in_one_call():
    assert np.array_equal(onenn.family_weights(2.0, 5.0, d=3, K=2), np.diag([2.0, 2.0, 2.0, 0.0, 0.0, -5.0]))


def test_the_reduced_loss_is_the_landscapes():
    from onenn.theory.landscape import LandscapeSettings, landscape

    grid = landscape(LandscapeSettings(d=4, N=8, xi1_range=(0.0, 3.0), xi2_range=(0.0, 6.0), grid=2, prompts=500))
    for row in grid.itertuples():
        assert onenn.reduced_loss(row.xi1, row.xi2, d=4, N=8, prompts=500) == row.reduced_loss
    # at xi = 0 the attention is uniform; with K the loss is the binary one times (K - 1) / K (Lemma 2)
    binary = onenn.reduced_loss(1.0, 2.0, d=4, N=8, prompts=500)
    assert onenn.reduced_loss(1.0, 2.0, d=4, N=8, K=3, prompts=500) == pytest.approx(binary * 2 / 3, rel=1e-12)


def test_the_population_flow_in_one_call():
    flow = onenn.population_flow(3.0, d=4, N=8, time_end=100.0, times=[1.0, 10.0, 100.0], t1_nodes=32, gap_nodes=8)
    assert list(flow.columns) == ["time", "xi1", "xi2", "loss", "boundary", "stuck_mass", "mass"]
    assert flow["time"].tolist() == [1.0, 10.0, 100.0] and np.isfinite(flow[["xi1", "xi2", "loss"]]).all().all()
    assert flow["loss"].is_monotonic_decreasing  # a gradient flow never raises its loss
