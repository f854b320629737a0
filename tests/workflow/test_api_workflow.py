"""onenn.api against Snakemake itself: one tiny run's metrics.parquet, made by the workflow's rules in a copy of the
workflow, equals onenn.evaluate(onenn.train(...)) for the same settings and seed (docs/guide.md#the-python-api)."""

import pandas as pd
import yaml

import onenn
from onenn.base import paths
from onenn.base.io import load_table
from tests.configs import QUICK, load_config
from tests.workflow.helpers import copy_workflow, snakemake

#: every training setting written out, so that neither the quick preset nor config.yaml's defaults decide one
SETTINGS = {
    **onenn.default_settings(),
    "d": 3,
    "N": 4,
    "K": 3,
    "steps": 40,
    "n_eval": 4,
    "batch": 16,
    "test_size": 64,
    "seeds": 1,
    "device": "cpu",
    "loss": "cross_entropy",
}


def test_the_api_gives_the_workflows_metrics(tmp_path):
    workdir = copy_workflow(tmp_path)
    test_seed = load_config(*QUICK)["test_sets"]["seed"]
    extra = {"experiments": {"api_check": {"kind": "train", "figure": "sweep", **SETTINGS}}}
    (workdir / "api_check.yaml").write_text(yaml.safe_dump(extra))
    target = paths.RUN_METRICS.format(experiment="api_check", variant="default", seed=0)
    # an option after the config files ends their list, so the target is read as the target
    done = snakemake(workdir, "--nolock", target, configfiles=("api_check.yaml",))
    assert done.returncode == 0, done.stderr[-5000:]
    workflow = load_table(workdir / target)

    result = onenn.train(experiment="api_check", test_set_seed=test_seed, **SETTINGS)
    ours = onenn.evaluate(result)
    # every column and number, but where the code came from: the copy here is no git checkout (its `code`, the
    # fingerprint of the code that ran, is the same)
    pd.testing.assert_frame_equal(ours.drop(columns="code_from"), workflow.drop(columns="code_from"), check_exact=True)
