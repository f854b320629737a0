"""The whole-run benchmark runs Snakemake in a scratch copy and accounts for its CPU (one small job here; the
quick preset's table is benchmarks/run-quick.md, docs/performance.md)."""

from __future__ import annotations

import pytest

from tools import bench


def cells(text: str) -> dict[str, list[str]]:
    rows = [line.strip("| ").split(" | ") for line in text.splitlines() if line.startswith("| ")]
    return {row[0]: row for row in rows}


def test_a_run_of_one_job_is_accounted_for(tmp_path):
    work, output = tmp_path / "work", tmp_path / "run.md"
    target = "results/datasets/uniform/d8/N16/K3/n1024.npz"  # one numpy job of the quick preset
    arguments = ["--target", "quick", "--cores", "1", "--workdir", str(work), "--output", str(output), "--", target]
    text = bench.main(["run", *arguments])
    assert (work / target).exists() and output.read_text() == text
    table = cells(text)
    tree, own, job = (
        table["whole run (process tree)"],
        table["Snakemake process itself"],
        table["rule test_set_uniform"],
    )
    assert tree[1] == job[1] == "1"
    wall, tree_cpu, own_cpu, job_cpu = float(tree[2]), float(tree[5]), float(own[5]), float(job[5])
    assert float(job[2]) <= wall
    assert 0 < own_cpu < tree_cpu and own_cpu + job_cpu <= tree_cpu + 0.1  # rounding of three numbers to 0.1
    assert float(tree[3]) + float(tree[4]) == pytest.approx(tree_cpu, abs=0.11)
