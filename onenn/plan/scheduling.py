"""Settings of Snakemake's own scheduler that the workflow adjusts. No torch, no snakemake import.

Snakemake's command line limits job starts to ``--max-jobs-per-timespan`` (default ``100/1s``). With a limit,
each pass of the scheduler's loop arms a timer that wakes the loop again a timespan later, and each finished job
wakes it too, so the timers never die out: after ``n`` finished jobs the loop runs about ``n`` times a second,
each time re-evaluating the parameters and checking the input files of every ready job (upstream:
snakemake/snakemake#3744). On 2 cores that spent about a quarter of a core for the whole run
(docs/performance.md). Without a limit (Snakemake's Python API's default) the loop wakes only when a job
finishes or fails, which is all a local run or a cluster run needs.
"""

from __future__ import annotations

from typing import Any

#: the command line's default --max-jobs-per-timespan, 100 jobs a second, as (jobs, seconds)
DEFAULT_RATE_LIMIT = (100, 1)


def drop_default_rate_limit(scheduler: Any, settings: Any) -> bool:
    """Remove the command line's default job rate limit from a Snakemake ``scheduler`` (its ``JobScheduler``),
    given the run's scheduling ``settings``; a limit the user chose (any other value) is kept. True if removed.

    Called from the Snakefile's ``onstart``, after Snakemake has built its scheduler and before the first job:
    the settings do not exist yet while the Snakefile is read.
    """
    limit = getattr(settings, "max_jobs_per_timespan", None)
    if scheduler is None or limit is None or getattr(scheduler, "job_rate_limiter", None) is None:
        return False
    if (limit.max_jobs, limit.timespan) != DEFAULT_RATE_LIMIT:
        return False
    scheduler.job_rate_limiter = None
    return True


def adjust_scheduler(scheduler: Any, settings: Any) -> str:
    """Drop the default job rate limit (``drop_default_rate_limit``) and say whether that took effect: the line the
    Snakefile's ``onstart`` logs. A Snakemake that renamed the attributes this relies on is named as such: the run
    is still correct, only its scheduler wakes more often."""
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
