"""Change the code after a complete quick run: Snakemake plans the jobs that run the changed module, and what
depends on their outputs, and nothing else; its reason names the module (onenn/base/provenance.py).

Each case edits one module of a copy of the finished run, asserts on the dry-run plan (`snakemake -n`), then puts
the module back. The expected jobs are read off the finished run's folders.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from onenn.base.io import CHECKSUM_SUFFIX
from tests.workflow.helpers import Job, parse_plan, snakemake

#: the rules that draw on every experiment's table: the headline table, the scorecard and their pages
HEADLINE = {"summary", "report_table", "claims", "claims_page"}


@pytest.fixture(scope="module")
def finished(quick_run, tmp_path_factory) -> Path:
    """A copy of the complete quick run (files, times and Snakemake's records), whose code the cases edit."""
    return Path(shutil.copytree(quick_run, tmp_path_factory.mktemp("code") / "run", symlinks=True))


@contextmanager
def edited(workdir: Path, module: str, old: str | None, new: str) -> Iterator[None]:
    """``module`` (a path under ``workdir``) with ``old`` replaced by ``new`` (``old=None``: ``new`` appended),
    put back afterwards."""
    path = workdir / module
    text = path.read_text()
    assert old is None or old in text, f"{old!r} is no longer in {module}: update this test"
    path.write_text(text + new if old is None else text.replace(old, new, 1))
    try:
        yield
    finally:
        path.write_text(text)


def dry_run(workdir: Path) -> tuple[list[Job], str]:
    done = snakemake(workdir, "-n")
    assert done.returncode == 0, done.stderr[-3000:]
    return parse_plan(done.stdout + done.stderr), done.stdout + done.stderr


def by_rule(jobs: list[Job]) -> Counter:
    return Counter(j.rule for j in jobs)


def on_disk(workdir: Path, folder: str, pattern: str) -> set[str]:
    """The files of a folder of the finished run (their checksums left out), relative to ``workdir``."""
    return {
        p.relative_to(workdir).as_posix()
        for p in (workdir / folder).glob(pattern)
        if not p.name.endswith(CHECKSUM_SUFFIX)
    }


def runs(workdir: Path) -> set[str]:
    """``experiment/variant/seedN`` of every finished training run."""
    return {
        p.parent.relative_to(workdir / "results/runs").as_posix()
        for p in (workdir / "results/runs").glob("*/*/*/run.json")
    }


def run_of(job: Job) -> str:
    return f"{job.wildcards['experiment']}/{job.wildcards['variant']}/seed{job.wildcards['seed']}"


def names_module(job: Job, module: str) -> bool:
    """The job's reason is a change of ``module``'s code: its parameter ``module=<fingerprint>``, before and now."""
    return "Params have changed" in job.reason and job.reason.count(f"'{module}=") == 2


def test_a_changed_loss_reruns_every_training_and_all_downstream(finished):
    square = "return 0.5 * (residual**2).sum(-1), residual"
    with edited(finished, "onenn/maths/losses.py", square, "return 0.25 * (residual**2).sum(-1), 0.5 * residual"):
        jobs, _ = dry_run(finished)
    trained = runs(finished)
    trainings = [j for j in jobs if j.rule in ("train", "binary_train")]
    assert {run_of(j) for j in trainings} == trained and len(trainings) == len(trained)
    assert all(names_module(j, "onenn.maths.losses") for j in trainings)
    assert {run_of(j) for j in jobs if j.rule in ("evaluate", "binary_evaluate")} == trained
    experiments = {run.split("/")[0] for run in trained}
    assert {j.wildcards["experiment"] for j in jobs if j.rule == "table"} >= experiments
    assert {j.wildcards["experiment"] for j in jobs if j.rule == "figure"} >= experiments
    assert HEADLINE <= set(by_rule(jobs))
    assert not [j for j in jobs if j.rule.startswith(("test_set", "binary_set"))]  # the test sets use no loss


def test_changed_figure_code_reruns_only_the_figures(finished):
    with edited(finished, "onenn/analysis/plots.py", None, "\n_EDITED = True\n"):
        jobs, _ = dry_run(finished)
    assert set(by_rule(jobs)) == {"figure"}, by_rule(jobs)
    assert {o for j in jobs for o in j.outputs} == on_disk(finished, "results/figures", "*")
    assert all(names_module(j, "onenn.analysis.plots") for j in jobs)


def test_changed_table_code_reruns_that_table_its_figure_the_summary_and_the_scorecard(finished):
    with edited(finished, "onenn/theory/scaling.py", None, "\n_EDITED = True\n"):
        jobs, _ = dry_run(finished)
    per_experiment = {(j.rule, j.wildcards.get("experiment")) for j in jobs if j.rule in ("table", "figure")}
    assert per_experiment == {("table", "scaling_identity"), ("figure", "scaling_identity")}
    assert set(by_rule(jobs)) == {"table", "figure", *HEADLINE} and len(jobs) == 2 + len(HEADLINE)
    (table,) = [j for j in jobs if j.rule == "table"]
    assert names_module(table, "onenn.theory.scaling")


@pytest.mark.parametrize(
    "old, new",
    [
        ("def square(", "# a comment on the square loss\ndef square("),
        ('"""', '"""Reworded. '),  # the module's docstring
    ],
    ids=["comment", "docstring"],
)
def test_a_comment_or_docstring_change_reruns_nothing(finished, old, new):
    with edited(finished, "onenn/maths/losses.py", old, new):
        jobs, text = dry_run(finished)
    assert not jobs and "Nothing to be done" in text, by_rule(jobs)
