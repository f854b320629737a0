"""The worked example of docs/experiments.md through Snakemake on the quick preset: a new experiment that sweeps d
(workflow/examples/input_dimension.yaml), and one that sweeps sigma, reuse the figure ``sweep``, whose legend
groups the curves by the swept setting."""

import json

import yaml
from PIL import Image

from tests.workflow.helpers import copy_workflow, snakemake

#: tiny runs: the test checks the grouping, not the learning
SMALL = {
    "defaults": {"test_size": 128, "n_eval": 5},
    "experiments": {
        "input_dimension": {"steps": 40, "seeds": 1},
        "noise_scale": {"kind": "train", "figure": "sweep", "steps": 40, "seeds": 1, "sweep": {"sigma": [1.0, 3.0]}},
    },
}


def test_new_experiments_reuse_the_sweep_figure_grouped_by_their_setting(tmp_path):
    workdir = copy_workflow(tmp_path)
    (workdir / "small.yaml").write_text(yaml.safe_dump(SMALL, sort_keys=False))
    figures = ["results/figures/input_dimension.png", "results/figures/noise_scale.png"]
    # -p ends the list of --configfile's, so that the figures are read as targets
    done = snakemake(workdir, "-p", *figures, configfiles=("workflow/examples/input_dimension.yaml", "small.yaml"))
    assert done.returncode == 0, done.stderr[-5000:]
    for path, key, entries in zip(figures, ("d", "sigma"), (["4", "8", "16"], ["1.0", "3.0"])):
        text = Image.open(workdir / path).text
        assert text["Title"] == f"onenn figure sweep, grouped by {key}"
        assert json.loads(text["Legends"])[0] == {"title": key, "entries": entries}
        assert (workdir / path).with_suffix(".pdf").read_bytes().startswith(b"%PDF")


def test_a_figure_with_nothing_to_group_by_fails_before_any_job(tmp_path):
    workdir = copy_workflow(tmp_path)
    seeds_only = {"kind": "train", "figure": "sweep", "variants": [{"name": "few", "seeds": 1}, {"name": "many"}]}
    (workdir / "bad.yaml").write_text(yaml.safe_dump({"experiments": {"seeds_only": seeds_only}}))
    done = snakemake(workdir, "-p", "results/figures/seeds_only.png", configfiles=("bad.yaml",))
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "ConfigError" in output, output[-5000:]
    assert "experiments.seeds_only.figure: figure 'sweep' groups its curves by the settings the variants vary" in output
    assert not (workdir / "results").exists()
