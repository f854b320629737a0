"""Damaged files of a finished quick run, through Snakemake: five files damaged at once in a copy of the run (the
session's quick run itself is never touched), a rerun that stops each job reading one with ``DamagedFile`` in its
log, the documented remedy, and results equal to the undamaged run's, byte for byte. And two invocations at once
in one folder: while the remedy runs, Snakemake's lock refuses a second, and the remedy completes unchanged.

The same checks without Snakemake, on synthetic files: tests/unit/test_damaged_files.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from onenn.base import paths
from onenn.base.io import load_arrays
from onenn.maths.prompts import SET_ARRAYS
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


LOCKS = ".snakemake/locks"

#: What the first run prints once it holds the lock, before it starts any job.
HELD = "onenn-test: the first run holds its lock and has started no job"

#: The workflow, with an ``onstart`` that holds the run where Snakemake calls it: after the run has taken its lock
#: and planned its jobs, before it starts the first (``snakemake.workflow.Workflow.execute``), until a line arrives
#: on its standard input. It replaces the workflow's own ``onstart``, which only tunes the scheduler's wake-ups.
HELD_SNAKEFILE = f"""
include: "Snakefile"


onstart:
    import sys

    print({HELD!r}, flush=True)
    sys.stdin.readline()
"""


def files_of(workdir: Path, *folders: str) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folders`` of ``workdir``, with its bytes and modification time."""
    return {
        p.relative_to(workdir).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for folder in folders
        for p in sorted((workdir / folder).rglob("*"))
        if p.is_file()
    }


def test_damaged_files_are_named_and_the_remedy_restores_the_results_while_a_second_run_is_refused(quick_run, tmp_path):
    """Five files damaged at once: each job that reads one stops, naming it, its problem and its remedy. The remedy
    (one run forcing the five files) is held after it has taken its lock and before its first job; a second run in
    the same folder, started then, is refused by the lock and changes no file; released, the remedy finishes with
    the undamaged results. Holding the first run in a known state makes the refusal the same on every machine:
    without the hold, which of Snakemake's refusals the second run meets depends on how far the first run's jobs
    have got (docs/reliability.md, "Two runs at once")."""
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

    (workdir / "held.smk").write_text(HELD_SNAKEFILE)
    first_cmd = [sys.executable, "-m", "snakemake", "--snakefile", "held.smk", "--cores", "2", *QUICK]
    # "--": the --forcerun list ends there; the default target named (held.smk alone would plan only the forced jobs)
    first_cmd += ["--forcerun", *(case.file for case in CASES.values()), "--", "all"]
    first = subprocess.Popen(
        first_cmd, cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    watchdog = threading.Timer(1200, first.kill)  # a hung run fails the test instead of hanging the suite
    watchdog.start()
    try:
        printed = []
        for line in first.stdout:  # until the first run is held (or ends: then the loop runs out)
            printed.append(line)
            if line.strip() == HELD:
                break
        assert printed and printed[-1].strip() == HELD, "the first run ended before it was held:\n" + "".join(printed)
        before = files_of(workdir, "results", "logs", ".snakemake/metadata", ".snakemake/incomplete")
        second = snakemake(workdir)
        after = files_of(workdir, "results", "logs", ".snakemake/metadata", ".snakemake/incomplete")
        out, _ = first.communicate(input="\n")  # releases the first run
    finally:
        watchdog.cancel()
        if first.poll() is None:
            first.kill()
    assert second.returncode != 0
    assert "Error: Directory cannot be locked." in second.stderr, second.stderr[-3000:]
    assert "--unlock" in second.stderr  # what to do when no other run is there
    assert after == before, "the refused run changed files"
    assert first.returncode == 0, out[-5000:]
    assert "rule train:" in out  # the first run did remake the forced runs
    assert not any((workdir / LOCKS).glob("*"))
    assert_same_results(quick_run, workdir)


@pytest.fixture(autouse=True)
def _quick_run_untouched(quick_run):
    """No test here may change the session's quick run (the other workflow tests read it)."""
    before = results_of(quick_run)
    yield
    assert results_of(quick_run) == before
