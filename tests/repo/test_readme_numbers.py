"""The README's numbers are the committed benchmarks' and scorecard's: the block between its ``numbers`` markers
is what ``python -m tools.docs numbers`` writes now, so a new benchmark or scorecard committed without rerunning
the tool fails here; the tool reads the files' formats, and refuses an incomplete run or a missing line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools import docs

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (docs.FULL, docs.QUICK, docs.CLAIMS, "README.md")


def test_the_readme_block_is_what_the_tool_writes_now():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert docs.current(readme) == docs.block(ROOT), (
        "README.md's numbers are not those of benchmarks/run-*.md and results/readme/claims.md: "
        "run `python -m tools.docs numbers` and commit README.md"
    )


@pytest.fixture
def copy(tmp_path) -> Path:
    for name in SOURCES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_the_numbers_are_read_from_the_files(copy):
    full = docs.run_benchmark(copy, docs.FULL)
    text = (copy / docs.FULL).read_text()
    whole = next(line for line in text.splitlines() if line.startswith("| whole run (process tree) |"))
    cells = [c.strip() for c in whole.strip("|").split("|")]
    assert (full.jobs, full.wall, full.cpu) == (int(cells[1]), float(cells[2]), float(cells[5]))
    assert "logical CPU" in full.machine and full.machine in text
    run, papers, ours = docs.scorecard(copy)
    assert f"the run of {run} (sha256" in (copy / docs.CLAIMS).read_text()
    claims = (copy / docs.CLAIMS).read_text()
    assert f"Verdicts on the paper's claims: {docs.counts(papers)}." in claims
    assert papers.tests and papers.expected is not None and f"{papers.expected:.2f}" in claims
    assert ours is None or f"Our own rows: {docs.counts(ours)}." in claims


def test_a_new_benchmark_makes_the_block_stale_and_the_tool_rewrites_it(copy, capsys):
    assert docs.main(["numbers", "--check"], root=copy) == 0
    path = copy / docs.FULL
    old = next(line for line in path.read_text().splitlines() if line.startswith("| whole run (process tree) |"))
    cells = old.split(" | ")
    cells[2] = "1234.5"
    path.write_text(path.read_text().replace(old, " | ".join(cells)))
    assert docs.main(["numbers", "--check"], root=copy) == 1
    assert "run `python -m tools.docs numbers`" in capsys.readouterr().err
    assert docs.main(["numbers"], root=copy) == 0
    assert "20.6 min of wall time" in (copy / "README.md").read_text()
    assert docs.main(["numbers", "--check"], root=copy) == 0


def test_a_new_scorecard_makes_the_block_stale(copy):
    path = copy / docs.CLAIMS
    text = path.read_text()
    line = next(x for x in text.splitlines() if x.startswith("Verdicts on the paper's claims:"))
    path.write_text(text.replace(line, line.replace("not run 0", "not run 7")))
    assert docs.main(["numbers", "--check"], root=copy) == 1


def test_a_scorecard_whose_chance_count_does_not_name_its_rows_is_refused(copy):
    """The words the scorecard writes (``COUNTED``) are what make the README's sentence on the count true."""
    assert docs.NAMED in docs.block(copy)
    path = copy / docs.CLAIMS
    path.write_text(path.read_text().replace(docs.COUNTED, "Counted:"))
    with pytest.raises(docs.NumbersError, match="does not name its rows"):
        docs.block(copy)


@pytest.mark.parametrize(
    ("name", "old", "new", "message"),
    [
        (docs.FULL, "Machine:", "Computer:", "Machine"),
        (docs.QUICK, "| whole run (process tree) |", "| whole |", "whole run"),
        (
            docs.FULL,
            "| part |",
            "| **Snakemake exited with status 1: the run is not complete.** |\n| part |",
            "not",
        ),
        (docs.CLAIMS, "Verdicts on the paper's claims:", "Verdicts:", "Verdicts"),
        (docs.CLAIMS, "differs 3,", "differs 3 and", "in that order"),
        ("README.md", docs.END, "", "once"),
    ],
)
def test_a_file_not_in_its_format_is_refused_by_name(copy, name, old, new, message):
    path = copy / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(docs.NumbersError, match=message):
        docs.main(["numbers", "--check"], root=copy)


def test_a_missing_file_is_named(copy):
    (copy / docs.QUICK).unlink()
    with pytest.raises(docs.NumbersError, match="run-quick.md is missing"):
        docs.block(copy)
