"""Change one setting after a complete quick run: Snakemake plans only the jobs that setting affects.

Each case writes the change to a third config file (layered on config.yaml and the quick preset) and asserts on
the dry-run plan (`snakemake -n`: every job to run, its rule and wildcards), never on timing. The expected jobs
are read off the finished run's folders, not computed by the workflow's own code.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from onenn.base.io import CHECKSUM_SUFFIX
from tests.workflow.helpers import ROOT, Job, parse_plan, snakemake

QUICK = yaml.safe_load((ROOT / "workflow/presets/quick.yaml").read_text())
EXPERIMENT = "convergence"  # the experiment whose own settings change in cases (b) and (c)


@pytest.fixture
def plan(quick_run, tmp_path):
    """``plan(change)``: the dry-run plan of the complete quick run with ``change`` as a third config file."""

    def planned(change: dict) -> list[Job]:
        path = tmp_path / "change.yaml"
        path.write_text(yaml.safe_dump(change))
        done = snakemake(quick_run, "-n", configfiles=(str(path),))
        assert done.returncode == 0, done.stderr[-3000:]
        return parse_plan(done.stdout + done.stderr)

    return planned


def runs_on_disk(workdir: Path, experiment: str = "*") -> set[tuple[str, str, str]]:
    """(experiment, variant, seed) of every finished run folder."""
    return {
        (p.parts[-3], p.parts[-2], p.parts[-1].removeprefix("seed"))
        for p in (workdir / "results/runs").glob(f"{experiment}/*/seed*")
    }


def run_ids(jobs: list[Job], rule: str) -> set[tuple[str, str, str]]:
    return {(j.wildcards["experiment"], j.wildcards["variant"], j.wildcards["seed"]) for j in jobs if j.rule == rule}


def by_rule(jobs: list[Job]) -> Counter:
    return Counter(j.rule for j in jobs)


def is_headline(job: Job) -> bool:
    """A job over every experiment at once (the headline table and its renderings), if the workflow has one."""
    return "experiment" not in job.wildcards and all(o.startswith("results/tables/") for o in job.outputs)


def experiments_of(jobs: list[Job], rule: str) -> list[str]:
    return sorted(j.wildcards["experiment"] for j in jobs if j.rule == rule)


def test_a_plotting_setting_reruns_only_the_figures(quick_run, plan):
    jobs = plan({"plots": {"dpi": 99}})
    figures = {
        p.relative_to(quick_run).as_posix()
        for p in (quick_run / "results/figures").iterdir()
        if not p.name.endswith(CHECKSUM_SUFFIX)  # the checksum beside each figure: not an output of its own
    }
    assert jobs and all(o.startswith("results/figures/") for j in jobs for o in j.outputs), by_rule(jobs)
    assert {o for j in jobs for o in j.outputs} == figures  # every figure, nothing else
    assert all("params" in j.reason.lower() for j in jobs)


def test_b_one_experiments_steps_rerun_only_that_experiment(quick_run, plan):
    steps = QUICK["experiments"][EXPERIMENT]["steps"]
    jobs = plan({"experiments": {EXPERIMENT: {"steps": steps + 100}}})
    runs = runs_on_disk(quick_run, EXPERIMENT)
    assert run_ids(jobs, "train") == runs and run_ids(jobs, "evaluate") == runs
    assert all("params" in j.reason.lower() for j in jobs if j.rule == "train")
    assert experiments_of(jobs, "table") == [EXPERIMENT] and experiments_of(jobs, "figure") == [EXPERIMENT]
    rest = [j for j in jobs if j.rule not in ("train", "evaluate", "table", "figure")]
    assert all(is_headline(j) for j in rest), by_rule(rest)
    assert len(jobs) == 2 * len(runs) + 2 + len(rest)


def test_c_a_new_seed_plans_one_training_and_evaluation_per_variant(quick_run, plan):
    seeds = QUICK["experiments"][EXPERIMENT]["seeds"]
    jobs = plan({"experiments": {EXPERIMENT: {"seeds": seeds + 1}}})
    variants = {variant for _, variant, _ in runs_on_disk(quick_run, EXPERIMENT)}
    new_runs = {(EXPERIMENT, variant, str(seeds)) for variant in variants}  # seeds are 0 .. seeds-1
    assert run_ids(jobs, "train") == new_runs and run_ids(jobs, "evaluate") == new_runs
    assert experiments_of(jobs, "table") == [EXPERIMENT] and experiments_of(jobs, "figure") == [EXPERIMENT]
    rest = [j for j in jobs if j.rule not in ("train", "evaluate", "table", "figure")]
    assert all(is_headline(j) for j in rest), by_rule(rest)


def test_d_the_separated_margin_regenerates_those_test_sets_and_reevaluates_without_training(quick_run, plan):
    datasets = sorted(p.relative_to(quick_run).as_posix() for p in (quick_run / "results/datasets").rglob("*.npz"))
    separated = [p for p in datasets if "/separated/" in p]
    assert separated and all("/delta0.1/" in p for p in separated)  # the preset's margin, in every separated set
    jobs = plan({"defaults": {"delta": 0.2}})
    outputs = [o for j in jobs for o in j.outputs]
    assert not any(o.endswith("weights.npz") for o in outputs)  # no training, of any kind
    assert sorted(o for o in outputs if o.startswith("results/datasets/")) == sorted(
        p.replace("/delta0.1/", "/delta0.2/") for p in separated
    )  # the separated sets, at the new margin, only
    runs = runs_on_disk(quick_run)  # every run folder, of every experiment that trains
    evaluated = {tuple(o.split("/")[2:5]) for o in outputs if o.endswith("/metrics.parquet")}
    assert evaluated == {(e, v, f"seed{s}") for e, v, s in runs}
    trained = sorted({experiment for experiment, _, _ in runs})
    per_experiment = [j for j in jobs if "experiment" in j.wildcards and not j.outputs[0].startswith("results/runs/")]
    assert sorted(o for j in per_experiment for o in j.outputs) == sorted(
        [f"results/tables/{e}.parquet" for e in trained]
        + [f"results/figures/{e}.{x}" for e in trained for x in ("pdf", "png")]
    )
    rest = [j for j in jobs if "experiment" not in j.wildcards and not j.outputs[0].startswith("results/datasets/")]
    assert all(is_headline(j) for j in rest), by_rule(rest)
