"""A margin with more than six significant digits: Snakemake builds its test set at that exact margin, not at a
number read back from the path (onenn/plan/experiments.py: delta_named)."""

import json

import numpy as np
import yaml

from onenn.base.io import IDENTITY, load_arrays
from onenn.maths.prompts import make_test_set
from onenn.plan import experiments as ex
from tests.configs import QUICK, load_config, merge
from tests.workflow.helpers import copy_workflow, snakemake

DELTA = 0.123456789


def test_the_test_set_of_a_long_margin_is_made_at_that_margin(tmp_path):
    workdir = copy_workflow(tmp_path)
    change = {"defaults": {"delta": DELTA}}
    (workdir / "delta.yaml").write_text(yaml.safe_dump(change))
    s = ex.settings(merge(load_config(*QUICK), change), "convergence", "N=16")
    target = ex.test_set_path("separated", s)
    done = snakemake(
        workdir, "--cores", "2", target, configfiles=("delta.yaml",)
    )  # --configfile takes all words after it
    assert done.returncode == 0, done.stderr[-3000:]
    made = load_arrays(workdir / target)
    assert json.loads(str(made.pop(IDENTITY)))["delta"] == DELTA  # the margin the set says it was made at
    seed = load_config(*QUICK)["test_sets"]["seed"]
    exact = make_test_set("separated", s["test_size"], s["d"], s["N"], s["K"], DELTA, seed)
    rounded = make_test_set("separated", s["test_size"], s["d"], s["N"], s["K"], float(f"{DELTA:g}"), seed)
    assert made.keys() == exact.keys() and all(np.array_equal(made[k], exact[k]) for k in exact)
    assert not all(np.array_equal(made[k], rounded[k]) for k in rounded)
