"""The worked example of docs/experiments.md through Snakemake on the quick preset: a new experiment that sweeps d
(workflow/examples/input_dimension.yaml) reuses the figure ``sweep``, whose legend groups the curves by the swept
setting (the grouping by other settings, sigma among them, without Snakemake: tests/unit/test_plots.py)."""

import json

import pytest
import yaml
from PIL import Image

from tests.workflow.helpers import copy_workflow, snakemake

EXAMPLE = "workflow/examples/input_dimension.yaml"
#: tiny runs: the test checks the grouping, not the learning
SMALL = {
    "defaults": {"test_size": 128, "n_eval": 5},
    "experiments": {
        "input_dimension": {"steps": 40, "seeds": 1},
    },
}


@pytest.mark.slow  # 16 s; without Snakemake, tests/unit/test_plots.py draws this example's figure and its legend
def test_a_new_experiment_reuses_the_sweep_figure_grouped_by_its_setting(tmp_path):
    workdir = copy_workflow(tmp_path)
    (workdir / "small.yaml").write_text(yaml.safe_dump(SMALL, sort_keys=False))
    png = workdir / "results/figures/input_dimension.png"
    # -p ends the list of --configfile's, so that the figure is read as the target
    done = snakemake(workdir, "-p", str(png.relative_to(workdir)), configfiles=(EXAMPLE, "small.yaml"))
    assert done.returncode == 0, done.stderr[-5000:]
    text = Image.open(png).text
    assert text["Title"] == "onenn figure sweep, grouped by d"
    assert json.loads(text["Legends"])[0] == {"title": "d", "entries": ["4", "8", "16"]}
    assert png.with_suffix(".pdf").read_bytes().startswith(b"%PDF")


def test_a_figure_with_nothing_to_group_by_fails_before_any_job(tmp_path):
    workdir = copy_workflow(tmp_path)
    seeds_only = {"kind": "train", "figure": "sweep", "variants": [{"name": "few", "seeds": 1}, {"name": "many"}]}
    (workdir / "bad.yaml").write_text(yaml.safe_dump({"experiments": {"seeds_only": seeds_only}}))
    done = snakemake(workdir, "-p", "results/figures/seeds_only.png", configfiles=("bad.yaml",))
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "ConfigError" in output, output[-5000:]
    assert "experiments.seeds_only.figure: figure 'sweep' groups its curves by the settings the variants vary" in output
    assert not (workdir / "results").exists()
