"""A training job killed with SIGKILL while it writes its weights, then `snakemake --rerun-incomplete`, gives
results identical to an uninterrupted run: end to end through Snakemake, in temporary copies of the workflow.

The job is held at that point, not raced: a ``sitecustomize`` module on the jobs' ``PYTHONPATH`` (test code, not
the workflow's) lets ``onenn.base.io.write_with`` write the run's weights to their temporary file, then records
the job's pid and waits until it is killed. So the kill comes at the same point of the job on every machine,
however fast or loaded: after the training, with the temporary file on disk and the weights not yet in place."""

import copy
import os
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
STEPS = 200

#: Imported at the start of every Python process that has it on its path (Snakemake and its jobs): once
#: ``onenn.base.io`` is imported, its ``write_with`` holds the write of ``ONENN_TEST_HOLD`` (a path) after the
#: temporary file is written: it writes the process's pid to ``ONENN_TEST_HELD`` and waits to be killed.
SITECUSTOMIZE = """
import importlib.abc
import importlib.machinery
import os
import sys
import threading
from pathlib import Path


def hold(io):
    target, held = Path(os.environ["ONENN_TEST_HOLD"]).resolve(), Path(os.environ["ONENN_TEST_HELD"])
    write_with = io.write_with

    def holding_write_with(path, writer):
        if Path(path).resolve() != target:
            return write_with(path, writer)

        def write_then_wait(tmp):
            writer(tmp)
            held.with_suffix(".tmp").write_text(str(os.getpid()))
            held.with_suffix(".tmp").rename(held)
            threading.Event().wait()  # until killed

        return write_with(path, write_then_wait)

    io.write_with = holding_write_with


class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "onenn.base.io":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            hold(module)

        spec.loader.exec_module = exec_module
        return spec


if "ONENN_TEST_HOLD" in os.environ:
    sys.meta_path.insert(0, Finder())
"""


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


def wait_until_held(held: Path, proc: subprocess.Popen) -> int:
    """The pid of the training job, once it is held with its weights in their temporary file. The deadline only
    turns a hung run into a failure; a held job waits however long this takes."""
    deadline = time.monotonic() + 1200
    while not held.exists():
        assert proc.poll() is None, "snakemake ended before the training job was held"
        assert time.monotonic() < deadline, "the training job was not held within 20 minutes"
        time.sleep(0.05)
    return int(held.read_text())


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


# "job" is slow (pytest -m slow): "everything" kills the job too, and Snakemake with it, and is the harder rerun
@pytest.mark.parametrize("victim", [pytest.param("job", marks=pytest.mark.slow), "everything"])
def test_sigkill_then_rerun_incomplete_gives_identical_results(reference, tmp_path, victim):
    """``job``: SIGKILL the training process only (Snakemake sees the job fail). ``everything``: SIGKILL
    Snakemake and its jobs at once, as a preempted node would (stale lock, incomplete job metadata)."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    workflow(workdir)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    held = tmp_path / "held"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])),
        "ONENN_TEST_HOLD": str(workdir / RUN / "weights.npz"),
        "ONENN_TEST_HELD": str(held),
    }
    proc = subprocess.Popen(
        snakemake_cmd(),
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        pid = wait_until_held(held, proc)
        assert list((workdir / RUN).glob(".weights.npz.*")), "the held job has no temporary file"
        os.kill(pid, signal.SIGKILL) if victim == "job" else os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert "done:" not in (workdir / TRAIN_LOG).read_text()
    # Nothing that looks complete: at most hidden temporary files in the run folder.
    assert not (workdir / RUN / "weights.npz").exists()
    left = sorted(p.name for p in (workdir / RUN).glob("[!.]*"))
    assert left == [], f"partial outputs left in {RUN}: {left}"
    assert not (workdir / "results/tables/interrupt.parquet").exists()

    if victim == "everything":
        run(workdir, "--unlock")  # a killed Snakemake leaves its lock behind
    run(workdir, "--rerun-incomplete")
    assert_same_results(reference, workdir)
