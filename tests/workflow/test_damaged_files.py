"""Damaged files of a finished quick run, through Snakemake: five files damaged at once in a copy of the run (the
session's quick run itself is never touched), a rerun that stops each job reading one with ``DamagedFile`` in its
log, the documented remedy, and results equal to the undamaged run's, byte for byte. And two invocations at once
in one folder: Snakemake's lock refuses the second, and the first completes unchanged.

The same checks without Snakemake, on synthetic files: tests/test_damaged_files.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from onenn.base import paths
from onenn.base.io import load_arrays
from onenn.prompts import SET_ARRAYS
from tests.workflow.helpers import QUICK, snakemake


def run_file(pattern: str, experiment: str, variant: str, seed: int = 0) -> str:
    return pattern.format(experiment=experiment, variant=variant, seed=seed)


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:1000])


def not_parquet(path: Path) -> None:
    path.write_text("experiment,variant,seed\ndistribution_shift,K=3,0\n")  # a CSV by another name


def record_of(other: str) -> Callable[[Path], None]:
    def put(path: Path) -> None:
        path.write_bytes((path.parents[2] / other).read_bytes())  # a fresh copy: newer than what reads it

    return put


def nan_in_w(path: Path) -> None:
    arrays = load_arrays(path)
    arrays["W"][3, 0, 0] = np.nan
    np.savez(path, **arrays)


def without_nn(path: Path) -> None:
    arrays = load_arrays(path)
    del arrays[SET_ARRAYS[-1]]
    np.savez(path, **arrays)


@dataclass
class Case:
    file: str
    damage: Callable[[Path], None]
    reader: str  # the rule that reads it
    logs: tuple[str, ...]  # the logs of its jobs that read it
    problem: str  # what the message says is wrong
    rule: str  # the rule the message names


CASES = {
    "truncated weights": Case(
        run_file(paths.RUN_WEIGHTS, "convergence", "N=16"),
        truncate,
        "evaluate",
        ("logs/evaluate/convergence/N=16/seed0.log",),
        "it is not a readable .npz archive (BadZipFile: File is not a zip file)",
        "train (in a binary experiment: binary_train)",
    ),
    "not parquet": Case(
        run_file(paths.RUN_METRICS, "distribution_shift", "K=3"),
        not_parquet,
        "table",
        ("logs/tables/distribution_shift.log",),
        "it is not a readable Parquet file (ArrowInvalid: ",
        "evaluate (in a binary experiment: binary_evaluate)",
    ),
    "record of another run": Case(
        run_file(paths.RUN_RECORD, "loss_function", "c=0.25"),
        record_of("c=0.5/seed0/run.json"),
        "evaluate",
        ("logs/evaluate/loss_function/c=0.25/seed0.log",),
        "it is the record of another run: variant is 'c=0.5', not 'c=0.25'; c is 0.5, not 0.25",
        "train (in a binary experiment: binary_train)",
    ),
    "nan in W": Case(
        run_file(paths.RUN_WEIGHTS, "diagonal_init", "epsilon=1"),
        nan_in_w,
        "evaluate",
        ("logs/evaluate/diagonal_init/epsilon=1/seed0.log",),
        "array 'W' holds non-finite values (NaN or infinite) in the weights saved at step 3",
        "train (in a binary experiment: binary_train)",
    ),
    "test set without an array": Case(
        paths.UNIFORM_SET.format(d=8, N=16, K=10, size=1024),
        without_nn,
        "evaluate",
        ("logs/evaluate/number_of_classes/K=10/seed0.log", "logs/evaluate/number_of_classes/K=10/seed1.log"),
        "the array 'nn' is missing (it holds 'x', 'classes'; expected 'x', 'classes', 'nn')",
        "test_set_uniform",
    ),
}


def copy_run(source: Path, dest: Path) -> Path:
    """A copy of a finished run, the workflow, its results and Snakemake's records, with the times of its files
    (Snakemake compares them), so that the copy is as complete as the original."""
    shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)
    return dest


def results_of(workdir: Path) -> dict[str, bytes]:
    """Every file under results/ but the figures (their PDFs carry the time they were drawn), with its bytes:
    tables, arrays, records, Markdown and HTML pages, and the checksums beside them."""
    return {
        p.relative_to(workdir).as_posix(): p.read_bytes()
        for p in sorted((workdir / "results").rglob("*"))
        if p.is_file() and "figures" not in p.parts
    }


def assert_same_results(reference: Path, workdir: Path) -> None:
    expected, got = results_of(reference), results_of(workdir)
    assert sorted(got) == sorted(expected)
    differ = [name for name in expected if got[name] != expected[name]]
    assert differ == [], f"results differ from the undamaged run's: {differ}"


def test_damaged_files_are_named_and_the_remedy_restores_the_results(quick_run, tmp_path):
    workdir = copy_run(quick_run, tmp_path)
    for case in CASES.values():
        case.damage(workdir / case.file)

    damaged = snakemake(workdir, "--keep-going")
    assert damaged.returncode != 0
    for name, case in CASES.items():
        for log in case.logs:
            text = (workdir / log).read_text()
            message = f"DamagedFile: {case.file} is damaged: {case.problem}"
            assert message in text, f"{name}: {log} says\n{text[-3000:]}"
            assert f"It is made by rule {case.rule}; remake it" in text, name
            assert f"snakemake --cores all --forcerun {case.file}\n" in text, name
        assert f"Error in rule {case.reader}:" in damaged.stderr, name

    remedied = snakemake(workdir, "--forcerun", *(case.file for case in CASES.values()))
    assert remedied.returncode == 0, remedied.stderr[-5000:]
    assert_same_results(quick_run, workdir)


LOCKS = ".snakemake/locks"


def test_a_second_invocation_in_the_same_folder_is_refused_and_the_first_completes(quick_run, tmp_path):
    """The first run remakes one training run and what depends on it; while it holds the lock, a second one in
    the same folder is refused with one of Snakemake's messages, and the first finishes with the undamaged results."""
    workdir = copy_run(quick_run, tmp_path)
    first_cmd = [sys.executable, "-m", "snakemake", "--cores", "1", *QUICK, "--forcerun", CASES["nan in W"].file]
    first = subprocess.Popen(first_cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not any((workdir / LOCKS).glob("*")):
            assert first.poll() is None, "the first run ended before it took its lock"
            assert time.monotonic() < deadline, "the first run took no lock"
            time.sleep(0.05)
        second = snakemake(workdir)
        still_running = first.poll() is None
        out, _ = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
    assert still_running, "the first run ended before the second was refused: the test proved nothing"
    assert second.returncode != 0
    # Snakemake refuses in one of two ways, depending on how far the first run's job has got: the lock, or (when
    # the job has marked its outputs incomplete and they still exist) the incomplete files, checked before the lock
    locked = "Error: Directory cannot be locked." in second.stderr
    incomplete = "The files below seem to be incomplete." in second.stderr
    assert locked or incomplete, second.stderr[-3000:]
    if locked:
        assert "--unlock" in second.stderr  # what to do when no other run is there
    assert first.returncode == 0, out[-5000:]
    if not locked:  # the incomplete files are the first run's outputs: the forced one or one downstream of it
        listed = second.stderr.split("Incomplete files:", 1)[1].split()
        assert listed, second.stderr[-3000:]
        assert all(path in out for path in listed), (listed, out[-5000:])
    assert not any((workdir / LOCKS).glob("*"))
    assert_same_results(quick_run, workdir)


@pytest.fixture(autouse=True)
def _quick_run_untouched(quick_run):
    """No test here may change the session's quick run (the other workflow tests read it)."""
    before = results_of(quick_run)
    yield
    assert results_of(quick_run) == before
