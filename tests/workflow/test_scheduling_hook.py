"""The Snakefile's onstart hook (onenn/plan/scheduling.py) run by real Snakemake, not stand-ins: it logs whether it
took effect, so a Snakemake release that renames the scheduler's attributes is seen, not silently ignored."""

import pytest

from onenn.plan import experiments as ex
from tests.configs import QUICK, load_config
from tests.workflow.helpers import copy_workflow, snakemake


@pytest.fixture
def one_job(tmp_path) -> tuple:
    """A copy of the workflow and the cheapest target there is: one uniform test set."""
    s = ex.settings(load_config(*QUICK), "convergence", "N=16")
    return copy_workflow(tmp_path), ex.test_set_path("uniform", s)


@pytest.mark.parametrize(
    "args, said",
    [
        ((), "onenn: took effect: removed the default job rate limit (100/1s)"),
        (("--max-jobs-per-timespan", "50/1s"), "onenn: kept the job rate limit you chose (50 jobs per 1.0 s)"),
    ],
    ids=["default", "chosen"],
)
def test_the_scheduling_hook_says_it_took_effect(one_job, args, said):
    workdir, target = one_job
    done = snakemake(
        workdir, *args, "--cores", "2", target
    )  # an option between: --configfile takes every word after it
    assert done.returncode == 0, done.stderr[-3000:]
    assert said in done.stdout + done.stderr, (done.stdout + done.stderr)[-3000:]
    assert "did not take effect" not in done.stdout + done.stderr


def test_a_snakemake_without_the_attributes_is_reported_as_such():
    from types import SimpleNamespace

    from onenn.plan.scheduling import adjust_scheduler

    renamed = SimpleNamespace(rate_limiter=object())  # a release that renamed job_rate_limiter
    said = adjust_scheduler(renamed, SimpleNamespace(max_jobs_per_timespan=SimpleNamespace(max_jobs=100, timespan=1)))
    assert said.startswith("onenn: did not take effect") and "job_rate_limiter" in said
    assert adjust_scheduler(None, None).startswith("onenn: did not take effect")
