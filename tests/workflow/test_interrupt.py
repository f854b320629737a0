"""A training job killed with SIGKILL halfway, then `snakemake --rerun-incomplete`, gives results identical to
an uninterrupted run: end to end through Snakemake, in temporary copies of the workflow."""

import copy
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from onenn.base.io import load_arrays, load_json
from tests.workflow.helpers import ROOT, copy_workflow

RUN = "results/runs/interrupt/default/seed0"
TRAIN_LOG = "logs/train/interrupt/default/seed0.log"
STEPS = 30000  # about 4 s of training on an idle core (about 130 us a step), longer under load
KILL_AFTER = 0.5  # seconds after the training job logs its start: early in training however loaded the machine
# (load only slows training down, so the kill cannot land after the end)


def config() -> dict:
    c = copy.deepcopy(yaml.safe_load((ROOT / "config.yaml").read_text()))
    c["defaults"].update(test_size=256, n_eval=20)
    c["experiments"] = {"interrupt": {"kind": "train", "figure": "convergence", "steps": STEPS, "seeds": 1}}
    return c


def workflow(dest: Path) -> Path:
    copy_workflow(dest)
    (dest / "config.yaml").write_text(yaml.safe_dump(config(), sort_keys=False))
    return dest


def snakemake_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--cores", "2", "results/tables/interrupt.parquet", *args]


def run(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(snakemake_cmd(*args), check=False, cwd=workdir, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-5000:]
    return done


def wait_for_training(workdir: Path, proc: subprocess.Popen, timeout: float = 120) -> int:
    """The pid of the training job, once its log says it started training."""
    log = workdir / TRAIN_LOG
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "snakemake ended before the training job started"
        match = re.search(r"pid (\d+) INFO training", log.read_text()) if log.exists() else None
        if match:
            return int(match.group(1))
        time.sleep(0.05)
    raise TimeoutError("the training job did not start")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    workdir = workflow(tmp_path_factory.mktemp("uninterrupted"))
    run(workdir)
    return workdir


def assert_same_results(a: Path, b: Path) -> None:
    wa, wb = load_arrays(a / RUN / "weights.npz"), load_arrays(b / RUN / "weights.npz")
    assert wa.keys() == wb.keys()
    for key in wa:
        assert wa[key].dtype == wb[key].dtype and wa[key].tobytes() == wb[key].tobytes(), key  # bit for bit
    assert load_json(a / RUN / "run.json") == load_json(b / RUN / "run.json")
    ta, tb = (pd.read_parquet(w / "results/tables/interrupt.parquet") for w in (a, b))
    pd.testing.assert_frame_equal(ta, tb, check_exact=True)
    numeric = ta.select_dtypes("number").columns
    assert ta[numeric].to_numpy().tobytes() == tb[numeric].to_numpy().tobytes()


@pytest.mark.parametrize("victim", ["job", "everything"])
def test_sigkill_then_rerun_incomplete_gives_identical_results(reference, tmp_path, victim):
    """``job``: SIGKILL the training process only (Snakemake sees the job fail). ``everything``: SIGKILL
    Snakemake and its jobs at once, as a preempted node would (stale lock, incomplete job metadata)."""
    workdir = workflow(tmp_path)
    proc = subprocess.Popen(
        snakemake_cmd(), cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        pid = wait_for_training(workdir, proc)
        time.sleep(KILL_AFTER)
        os.kill(pid, signal.SIGKILL) if victim == "job" else os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert "done:" not in (workdir / TRAIN_LOG).read_text(), "the kill came after training ended"
    # Nothing that looks complete: at most hidden temporary files in the run folder.
    assert not (workdir / RUN / "weights.npz").exists()
    left = sorted(p.name for p in (workdir / RUN).glob("[!.]*"))  # nothing when the folder is not there
    assert left == [], f"partial outputs left in {RUN}: {left}"
    assert not (workdir / "results/tables/interrupt.parquet").exists()

    if victim == "everything":
        run(workdir, "--unlock")  # a killed Snakemake leaves its lock behind
    run(workdir, "--rerun-incomplete")
    assert_same_results(reference, workdir)
