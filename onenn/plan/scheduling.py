"""Snakemake's default ``--max-jobs-per-timespan`` keeps its scheduler waking ever more often
(snakemake/snakemake#3744): the workflow removes it (docs/performance.md). No torch, no snakemake import."""

from __future__ import annotations

from typing import Any

#: the command line's default --max-jobs-per-timespan, 100 jobs a second, as (jobs, seconds)
DEFAULT_RATE_LIMIT = (100, 1)


def drop_default_rate_limit(scheduler: Any, settings: Any) -> bool:
    """Remove the command line's default job rate limit from a Snakemake ``scheduler`` (a user's own limit is kept).
    True if removed; called from the Snakefile's ``onstart``, before the first job."""
    limit = getattr(settings, "max_jobs_per_timespan", None)
    if scheduler is None or limit is None or getattr(scheduler, "job_rate_limiter", None) is None:
        return False
    if (limit.max_jobs, limit.timespan) != DEFAULT_RATE_LIMIT:  # a limit the user chose
        return False
    scheduler.job_rate_limiter = None
    return True


def adjust_scheduler(scheduler: Any, settings: Any) -> str:
    """Drop the default job rate limit and return the line the Snakefile's ``onstart`` logs about it."""
    if drop_default_rate_limit(scheduler, settings):
        jobs, seconds = DEFAULT_RATE_LIMIT
        return f"onenn: took effect: removed the default job rate limit ({jobs}/{seconds}s); the scheduler wakes when a job ends"
    limit = getattr(settings, "max_jobs_per_timespan", None)
    if scheduler is None or limit is None or not hasattr(scheduler, "job_rate_limiter"):
        return (
            "onenn: did not take effect: this Snakemake has no workflow.scheduler.job_rate_limiter or "
            "workflow.scheduling_settings.max_jobs_per_timespan (renamed?); the run is correct, its scheduler only "
            "wakes more often (onenn/plan/scheduling.py, docs/performance.md)"
        )
    if scheduler.job_rate_limiter is None:
        return "onenn: nothing to do: this run has no job rate limit"
    return f"onenn: kept the job rate limit you chose ({limit.max_jobs} jobs per {limit.timespan} s)"
