"""Same inputs, same bytes: the quick preset run twice, in two folders, gives byte-identical Parquet tables and
figures (no timings, timestamps or paths in them), and a finished run plans nothing more."""

from pathlib import Path

import pytest

from tests.workflow.helpers import copy_workflow, snakemake


def tables(workdir: Path) -> dict[str, bytes]:
    """Every Parquet file and figure (PNG, PDF) under ``results/``, by its path relative to ``workdir``."""
    found = [p for suffix in ("parquet", "png", "pdf") for p in (workdir / "results").rglob(f"*.{suffix}")]
    return {p.relative_to(workdir).as_posix(): p.read_bytes() for p in sorted(found)}


@pytest.mark.slow
def test_two_runs_of_the_quick_preset_write_the_same_bytes_and_a_finished_run_plans_nothing(quick_run, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    again = copy_workflow(tmp_path / "elsewhere")
    done = snakemake(again)
    assert done.returncode == 0, done.stderr[-5000:]
    first, second = tables(quick_run), tables(again)
    assert first.keys() == second.keys() and len(first) > 20, sorted(first.keys() ^ second.keys())
    differ = sorted(name for name in first if first[name] != second[name])
    assert not differ, differ
    plan = snakemake(again, "-n")
    assert plan.returncode == 0 and "Nothing to be done" in plan.stdout + plan.stderr, plan.stdout[-3000:]
