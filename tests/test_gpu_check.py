"""The GPU check (tests/gpu/check.sh) without a GPU: its plan, its refusal, its table, and each stage run on the
CPU with Triton's interpreter standing in for the GPU, at a tiny scale."""

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from onenn.training.train import TrainSettings
from tests.configs import ROOT
from tools import gpu_check

CPU = torch.device("cpu")
TINY = TrainSettings(d=4, N=6, K=3, batch=7, lr=0.5, steps=20, n_eval=3, device="cpu")


def interpreter():
    pytest.importorskip("triton")
    if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        pytest.skip("TRITON_INTERPRET is off: the kernel needs a GPU")


def test_the_dry_run_prints_the_plan_of_every_stage(capsys):
    text = gpu_check.main(["--dry-run", "--gpu-slots", "3"])
    assert capsys.readouterr().out == text
    assert [line.split(":")[0].strip() for line in text.splitlines()[1:]] == list(gpu_check.STAGES)
    assert "--resources gpu=3" in text and text.count("results/figures/") == 6 and "tests/test_fused.py" in text


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_without_a_gpu_the_check_stops_at_once_and_says_why():
    done = subprocess.run(
        ["bash", "tests/gpu/check.sh", "--output", os.devnull],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "gpu_check: no CUDA GPU" in done.stderr and "--dry-run" in done.stderr


def test_the_table_has_a_row_for_each_engine():
    rows = [
        gpu_check.row("speed", engine, dev, "defaults", "1.0", "")
        for engine, dev in [("compiled", "cpu"), ("fused", "cuda")]
    ]
    lines = gpu_check.table(rows).splitlines()
    assert lines[0] == "| check | engine | device | config | result | verdict |"
    assert [line.split(" | ")[1] for line in lines[2:]] == ["compiled", "fused"]


def test_the_equality_stage(monkeypatch):
    interpreter()
    rows = gpu_check.equality_rows(CPU, TINY, {"padded": {"N": 5, "K": 10}})
    assert len(rows) == 2 * 5 and {r["engine"] for r in rows} == {"fused"}
    assert all(r["verdict"] == "ok" for r in rows), rows


def test_the_speed_stage():
    interpreter()
    rows = gpu_check.speed_rows(CPU, steps=2, reps=1, configs={"tiny": {"d": 4, "N": 4, "batch": 8}})
    assert [(r["engine"], r["device"]) for r in rows] == [("compiled", "cpu"), ("fused", "cpu")]
    assert rows[0]["verdict"] == "1.0× the CPU" and float(rows[1]["result"]) > 0


def test_the_learning_stage():
    interpreter()
    config = gpu_check.load_config(*gpu_check.QUICK)
    config["defaults"].update(d=4, batch=8, test_size=64)
    config["experiments"] = {"convergence": {**config["experiments"]["convergence"], "sweep": {"N": [4]}}}
    rows = gpu_check.learning_rows(config, CPU, seeds=2, max_steps=10)
    assert [(r["engine"], r["device"]) for r in rows] == [("compiled", "cpu"), ("fused", "cpu")]
    assert rows[1]["verdict"].startswith(("agree", "DIFFER")) and "10 steps" in rows[1]["config"]


def test_the_experiments_stage_plans_experiments_1_to_6_on_the_gpu(tmp_path):
    """The scratch copy and the command are valid: Snakemake's dry run plans every training job of experiments
    1–6 on CUDA, each asking for one GPU slot."""
    gpu_check.copy_workflow(tmp_path)
    command = [*gpu_check.experiments_command(4), "-n"]
    assert command[:3] == [sys.executable, "-m", "snakemake"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = (done.stdout + done.stderr).splitlines()
    assert "train                    97" in lines  # the job-count table: 97 training runs
    train_jobs = [i for i, line in enumerate(lines) if line.strip() == "rule train:"]
    resources = [next(x for x in lines[i:] if "resources:" in x) for i in train_jobs]
    assert len(train_jobs) == 97 and all(r.endswith("gpu=1") for r in resources)  # device cuda: one slot each


def test_a_run_with_the_default_settings_stays_within_the_budget():
    assert gpu_check.parse([]).budget + 15 < 600  # tests/gpu/check.sh kills it at 600 s
    assert replace(gpu_check.EQUALITY, steps=1).d == 8


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_the_tests_stage_runs_the_kernels_tests_compiled():
    """Without a GPU, the compiled kernel's tests skip (on a GPU they run on CUDA): the stage reports pytest's
    summary."""
    pytest.importorskip("triton")
    (test_row,) = gpu_check.test_rows(300)
    assert test_row["engine"] == "fused" and test_row["verdict"] == "ok"
    assert "skipped" in test_row["result"] and "passed" not in test_row["result"]


def test_a_stage_over_its_time_is_stopped_with_every_process_it_started(tmp_path):
    started = time.perf_counter()
    command = ["bash", "-c", "sleep 30 & echo $! > child; sleep 30"]
    assert gpu_check.run_stopped_after(command, tmp_path, 1) is None
    assert time.perf_counter() - started < 10
    child = Path(f"/proc/{int((tmp_path / 'child').read_text())}/stat")
    time.sleep(0.2)
    assert not child.exists() or child.read_text().split()[2] == "Z"  # the background job went with its group
    assert gpu_check.run_stopped_after(["true"], tmp_path, 10) == 0
