"""The GPU check (tests/gpu/check.sh) without a GPU: its plan, its refusal, its table, and each stage run on the
CPU with Triton's interpreter standing in for the GPU, at a tiny scale."""

import inspect
import os
import re
import select
import subprocess
import sys
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from onenn.maths.losses import LOSSES
from onenn.training.train import TrainSettings
from tests.configs import ROOT
from tests.gpu import check as gpu_check

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
    assert "--resources gpu=3" in text and text.count("results/figures/") == 6 and "tests/unit/test_gpu.py" in text


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_without_a_gpu_the_check_stops_at_once_and_says_why():
    done = subprocess.run(
        ["bash", "tests/gpu/check.sh", "--output", os.devnull],
        cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable},  # this interpreter, not whichever python3 is on PATH
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "gpu_check: no CUDA GPU" in done.stderr and "--dry-run" in done.stderr


def test_the_table_has_a_row_for_each_engine():
    rows = [
        gpu_check.row("speed", engine, dev, "defaults", "1.0", "") for engine, dev in [("cpu", "cpu"), ("gpu", "cuda")]
    ]
    lines = gpu_check.table(rows).splitlines()
    assert lines[0] == "| check | engine | device | config | result | verdict |"
    assert [line.split(" | ")[1] for line in lines[2:]] == ["cpu", "gpu"]


def test_the_equality_stage(monkeypatch):
    """Whole runs from the same seed, two losses and a padded shape in both precisions, then the GPU check: equal
    to round-off (every loss: test_gpu.py's kernel tests). A kernel made wrong (the next step's minibatches) fails."""
    interpreter()
    from onenn.training import train as engine_check
    from onenn.training.gpu import GpuEngine

    monkeypatch.setattr(engine_check, "STEPS", 12)
    assert inspect.signature(gpu_check.equality_rows).parameters["losses"].default == LOSSES  # on a GPU: all
    two = ("square", "mixture")  # the mixture: the loss with a parameter c
    rows = gpu_check.equality_rows(CPU, replace(TINY, steps=8), {"padded": {"N": 5, "K": 10}}, losses=two)
    assert len(rows) == 2 * 3 + 1 and {r["engine"] for r in rows} == {"gpu"}
    assert all(r["verdict"] == "ok" for r in rows[:-1]), rows
    assert rows[-1]["check"] == "equality: the GPU check (onenn.training.train)" and rows[-1]["verdict"].startswith(
        "passed"
    )
    assert rows[-1]["result"].startswith(f"seed {TINY.seed}: ") and "; " not in rows[-1]["result"]
    launch = GpuEngine.launch

    def shifted(self, n, losses):
        self.step += 1
        launch(self, n, losses)
        self.step -= 1

    monkeypatch.setattr(GpuEngine, "launch", shifted)
    wrong = gpu_check.equality_rows(CPU, replace(TINY, steps=8), {}, dtypes=("float32",), losses=("square",))
    assert [r["verdict"][:4] for r in wrong] == ["FAIL", "FAIL"], wrong
    assert wrong[-1]["result"].count("seed ") == 2  # the check tried a second seed


def test_the_speed_stage():
    interpreter()
    rows = gpu_check.speed_rows(CPU, steps=2, reps=1, configs={"tiny": {"d": 4, "N": 4, "batch": 8}})
    assert [(r["engine"], r["device"]) for r in rows] == [("cpu", "cpu"), ("gpu", "cpu")]
    assert rows[0]["verdict"] == "1.0× the CPU" and float(rows[1]["result"]) > 0


def test_the_learning_stage():
    interpreter()
    config = gpu_check.load_config(*gpu_check.QUICK)
    config["defaults"].update(d=4, batch=8, test_size=64)
    config["experiments"] = {"convergence": {**config["experiments"]["convergence"], "sweep": {"N": [4]}}}
    rows = gpu_check.learning_rows(config, CPU, seeds=2, max_steps=10)
    assert [(r["engine"], r["device"]) for r in rows] == [("cpu", "cpu"), ("gpu", "cpu")]
    assert rows[1]["config"] == "convergence: 1 variants × 2 seeds, 10 steps"
    # the two engines train the same runs: equal to round-off
    assert rows[1]["verdict"].startswith("equal (worst |Δ|/round-off "), rows[1]["verdict"]
    assert rows[0]["result"] == rows[1]["result"]


def test_the_difference_is_the_largest_in_units_of_round_off():
    """Two seeds, metrics (accuracy, ξ1, ξ2). Round-off: 0.002 in accuracy, 1e-4 of max(1, |ξ|) in ξ."""
    compiled = np.array([[0.5, 0.5, 2.0], [0.7, 1.0, 4.0]])
    assert gpu_check.difference(compiled, compiled) == 0
    assert gpu_check.difference(compiled, compiled + [0.001, 0.0, 0.0]) == pytest.approx(0.5)
    assert gpu_check.difference(compiled, compiled + [0.0, 5e-5, 0.0]) == pytest.approx(0.5)  # |ξ1| ≤ 1: absolute
    moved = compiled + [[0.0, 0.0, 0.0], [0.0, 0.0, 1.2e-3]]  # ξ2 = 4: 1.2e-3 of 4e-4
    assert gpu_check.difference(compiled, moved) == pytest.approx(3.0)


@pytest.mark.parametrize(
    "shift,verdict",
    [(0.0, "equal (worst |Δ|/round-off 0.00, N=8)"), (1e-3, "DIFFER (worst |Δ|/round-off 5.00, N=8)")],
)
def test_the_learning_verdict_names_the_worst_variant(monkeypatch, shift, verdict):
    """Runs faked with known final metrics: both engines alike, but for ξ2 of the GPU runs at N = 8, moved by
    ``shift`` (ξ2 = 2: round-off is 2e-4)."""

    def final_metrics(s, engine, test):
        moved = shift if engine == "gpu" and s.N == 8 else 0.0
        return np.array([0.9 + 0.01 * s.seed, 1.0, 2.0 + moved])

    monkeypatch.setattr(gpu_check, "final_metrics", final_metrics)
    config = gpu_check.load_config(*gpu_check.QUICK)
    config["defaults"].update(d=4, test_size=16)
    config["experiments"] = {"convergence": {**config["experiments"]["convergence"], "sweep": {"N": [4, 8]}}}
    rows = gpu_check.learning_rows(config, CPU, seeds=3, max_steps=10)
    assert [r["verdict"] for r in rows] == ["", verdict]


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


def test_the_equality_stage_runs_the_papers_shapes():
    """The paper's shapes are config.yaml's defaults (docs/method.md §4)."""
    defaults = gpu_check.load_config("config.yaml")["defaults"]
    for key in ("d", "N", "K", "batch", "sigma", "lr"):
        assert getattr(gpu_check.EQUALITY, key) == defaults[key], key


@pytest.mark.parametrize("fixed", [(1, 1, 1), (60, 90, 150)])
def test_a_run_with_the_default_settings_ends_before_check_sh_stops_it(monkeypatch, tmp_path, fixed):
    """On a fake clock: the equality, speed and learning stages take ``fixed`` seconds, the tests and experiments
    stages all the time they are given. The whole run ends within the budget, and the default budget, with a minute
    to start Python and write the table, within the limit after which tests/gpu/check.sh kills the check."""
    (limit,) = re.findall(r"timeout -k \d+ (\d+) ", (ROOT / "tests/gpu/check.sh").read_text())
    now = [0.0]
    given: dict[str, float] = {}

    def takes(name: str, seconds: float | None = None):
        def stage(*args, **kwargs):
            spent = fixed[("equality", "speed", "learning").index(name)] if seconds is None else kwargs[seconds]
            given[name] = spent
            now[0] += max(spent, 0.0)
            return [gpu_check.row(name, "gpu", "cuda", "", f"{spent:.0f} s")]

        return stage

    monkeypatch.setattr(gpu_check, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    monkeypatch.setattr(gpu_check, "require_gpu", lambda: CPU)
    monkeypatch.setitem(sys.modules, "triton", SimpleNamespace(__version__="0"))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "a fake GPU")
    for name in ("equality", "speed", "learning"):
        monkeypatch.setattr(gpu_check, f"{name}_rows", takes(name))
    monkeypatch.setattr(gpu_check, "test_rows", lambda seconds: takes("tests", "seconds")(seconds=seconds))
    monkeypatch.setattr(
        gpu_check, "experiment_rows", lambda slots, seconds: takes("experiments", "seconds")(seconds=seconds)
    )
    budget = gpu_check.parse([]).budget
    gpu_check.main(["--output", str(tmp_path / "gpu.md")])
    assert set(given) == set(gpu_check.STAGES)
    assert now[0] <= budget and given["experiments"] > 0, given
    assert budget + 60 <= int(limit)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_the_tests_stage_runs_the_kernels_tests_compiled():
    """Without a GPU, the compiled kernel's tests skip (on a GPU they run on CUDA): the stage reports pytest's
    summary."""
    pytest.importorskip("triton")
    (test_row,) = gpu_check.test_rows(300)
    assert test_row["engine"] == "gpu" and test_row["verdict"] == "ok"
    assert "skipped" in test_row["result"] and "passed" not in test_row["result"]


def test_a_stage_over_its_time_is_stopped_with_every_process_it_started(tmp_path, monkeypatch):
    """The stage's command starts a background job and tells its pid through a named pipe; the stage's clock
    starts only once the pid has come (so the job exists however slowly the shell starts), and the job must end
    with its group. Both would outlive the test by far if not stopped."""
    os.mkfifo(tmp_path / "child")
    command = ["bash", "-c", "sleep 1000 & echo $! > child; sleep 1000"]
    children = []

    class Popen(subprocess.Popen):
        def wait(self, timeout=None):
            if timeout is not None and not children:  # the stage's timed wait: first the background job's pid
                pid = int((tmp_path / "child").read_text())
                children.append(os.pidfd_open(pid))  # a handle on the job that a reused pid cannot fool
            return super().wait(timeout)

    monkeypatch.setattr(gpu_check.subprocess, "Popen", Popen)
    assert gpu_check.run_stopped_after(command, tmp_path, 1) is None
    (child,) = children
    try:
        ended, _, _ = select.select([child], [], [], 600)  # readable once the job has ended
    finally:
        os.close(child)
    assert ended, "the background job outlived its stopped group"
    assert gpu_check.run_stopped_after(["true"], tmp_path, 600) == 0  # returns when the command ends
