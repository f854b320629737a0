"""Failures through Snakemake: a diverging run, the same run recorded, and cuda asked for on a machine without
CUDA (the same failures without Snakemake: tests/unit/test_reliability.py)."""

import json
import subprocess
import sys

import pandas as pd
import torch
import yaml

from tests.helpers import HUGE_LR
from tests.workflow.helpers import ROOT, copy_workflow


def test_snakemake_diverged_and_cuda_runs_fail_clearly_and_write_no_table(tmp_path):
    """Three experiments in one workflow: a diverging one (error), the same one recorded, and cuda on a CPU
    machine. Only the recorded one gets a table, with its rows marked diverged."""
    workdir = copy_workflow(tmp_path)
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["defaults"].update(test_size=64, n_eval=5, N=4)
    blowup = {"kind": "train", "figure": "convergence", "steps": 30, "seeds": 1, "lr": HUGE_LR}
    config["experiments"] = {"blowup": blowup, "kept": {**blowup, "on_divergence": "record"}}
    if not torch.cuda.is_available():
        config["experiments"]["gpu"] = {
            "kind": "train",
            "figure": "convergence",
            "steps": 5,
            "seeds": 1,
            "device": "cuda",
        }
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    targets = [f"results/tables/{name}.parquet" for name in config["experiments"]]
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--keep-going", *targets],
        check=False,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0
    blowup_log = (workdir / "logs/train/blowup/default/seed0.log").read_text()
    assert (
        "Diverged: experiment blowup, variant default, seed 0: training diverged: non-finite minibatch loss "
        "or weights at step 1; last finite minibatch loss" in blowup_log
    )
    assert not (workdir / "results/tables/blowup.parquet").exists()
    assert not (workdir / "results/runs/blowup/default/seed0/weights.npz").exists()
    table = pd.read_parquet(workdir / "results/tables/kept.parquet")
    assert table["diverged"].all() and (table["diverged_step"] == 1).all()
    assert json.loads((workdir / "results/runs/kept/default/seed0/run.json").read_text())["diverged"] is True
    if not torch.cuda.is_available():
        assert (
            "device: cuda was requested but CUDA is not available"
            in (workdir / "logs/train/gpu/default/seed0.log").read_text()
        )
        assert not (workdir / "results/tables/gpu.parquet").exists()
