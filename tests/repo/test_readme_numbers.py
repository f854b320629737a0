"""The README's numbers are the committed benchmarks' and scorecard's: the block between its ``numbers`` markers
is what ``python -m tools.readme_numbers`` writes now, so a new benchmark or scorecard committed without rerunning
the tool fails here; the tool reads the files' formats, and refuses an incomplete run or a missing line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools import readme_numbers

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (readme_numbers.FULL, readme_numbers.QUICK, readme_numbers.CLAIMS, "README.md")


def test_the_readme_block_is_what_the_tool_writes_now():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_numbers.current(readme) == readme_numbers.block(ROOT), (
        "README.md's numbers are not those of benchmarks/run-*.md and results/readme/claims.md: "
        "run `python -m tools.readme_numbers` and commit README.md"
    )


@pytest.fixture
def copy(tmp_path) -> Path:
    for name in SOURCES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_the_numbers_are_read_from_the_files(copy):
    full = readme_numbers.run_benchmark(copy, readme_numbers.FULL)
    text = (copy / readme_numbers.FULL).read_text()
    whole = next(line for line in text.splitlines() if line.startswith("| whole run (process tree) |"))
    cells = [c.strip() for c in whole.strip("|").split("|")]
    assert (full.jobs, full.wall, full.cpu) == (int(cells[1]), float(cells[2]), float(cells[5]))
    assert "logical CPU" in full.machine and full.machine in text
    run, papers, ours = readme_numbers.scorecard(copy)
    assert f"the run of {run} (sha256" in (copy / readme_numbers.CLAIMS).read_text()
    claims = (copy / readme_numbers.CLAIMS).read_text()
    assert f"Verdicts on the paper's claims: {readme_numbers.counts(papers)}." in claims
    assert papers.tests and papers.expected is not None and f"{papers.expected:.2f}" in claims
    assert ours is None or f"Our own rows: {readme_numbers.counts(ours)}." in claims


def test_a_new_benchmark_makes_the_block_stale_and_the_tool_rewrites_it(copy, capsys):
    assert readme_numbers.main(["--check"], root=copy) == 0
    path = copy / readme_numbers.FULL
    old = next(line for line in path.read_text().splitlines() if line.startswith("| whole run (process tree) |"))
    cells = old.split(" | ")
    cells[2] = "1234.5"
    path.write_text(path.read_text().replace(old, " | ".join(cells)))
    assert readme_numbers.main(["--check"], root=copy) == 1
    assert "run `python -m tools.readme_numbers`" in capsys.readouterr().err
    assert readme_numbers.main([], root=copy) == 0
    assert "20.6 min of wall time" in (copy / "README.md").read_text()
    assert readme_numbers.main(["--check"], root=copy) == 0


def test_a_new_scorecard_makes_the_block_stale(copy):
    path = copy / readme_numbers.CLAIMS
    text = path.read_text()
    line = next(x for x in text.splitlines() if x.startswith("Verdicts on the paper's claims:"))
    path.write_text(text.replace(line, line.replace("not run 0", "not run 7")))
    assert readme_numbers.main(["--check"], root=copy) == 1


def test_a_scorecard_that_names_the_rows_it_counts_drops_the_caveat(copy):
    """The committed page may predate the count of level tests with a spread: the caveat goes with it, and a page
    that names its counted rows (the words the scorecard writes, ``COUNTED``) gets the sentence that says so."""
    path = copy / readme_numbers.CLAIMS
    text = path.read_text()
    old = readme_numbers.CHANCE.search(text).group(0)
    path.write_text(text.replace(old, f"{old} {readme_numbers.COUNTED} at one point at least, not post-hoc: a, b."))
    block = readme_numbers.block(copy)
    assert readme_numbers.NAMED in block and readme_numbers.CHANCE_CAVEAT not in block


@pytest.mark.parametrize(
    ("name", "old", "new", "message"),
    [
        (readme_numbers.FULL, "Machine:", "Computer:", "Machine"),
        (readme_numbers.QUICK, "| whole run (process tree) |", "| whole |", "whole run"),
        (
            readme_numbers.FULL,
            "| part |",
            "| **Snakemake exited with status 1: the run is not complete.** |\n| part |",
            "not",
        ),
        (readme_numbers.CLAIMS, "Verdicts on the paper's claims:", "Verdicts:", "Verdicts"),
        (readme_numbers.CLAIMS, "differs 3,", "differs 3 and", "in that order"),
        ("README.md", readme_numbers.END, "", "once"),
    ],
)
def test_a_file_not_in_its_format_is_refused_by_name(copy, name, old, new, message):
    path = copy / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(readme_numbers.NumbersError, match=message):
        readme_numbers.main(["--check"], root=copy)


def test_a_missing_file_is_named(copy):
    (copy / readme_numbers.QUICK).unlink()
    with pytest.raises(readme_numbers.NumbersError, match="run-quick.md is missing"):
        readme_numbers.block(copy)


def test_the_verdicts_are_the_scorecards():
    from onenn.analysis.scorecard import VERDICTS

    assert tuple(VERDICTS) == readme_numbers.VERDICTS
