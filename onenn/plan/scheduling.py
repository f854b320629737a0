"""The scheduler: a job's GPUs (``resources: gpu=...``, ``sbatch --gpus``), and no default job rate limit, which keeps
it waking ever more often (snakemake/snakemake#3744, docs/performance.md). No torch, no snakemake import."""

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onenn.base.settings import DEVICES

NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # one folder per GPU the NVIDIA driver sees

#: the command line's default --max-jobs-per-timespan, 100 jobs a second, as (jobs, seconds)
DEFAULT_RATE_LIMIT = (100, 1)


def adjust_scheduler(scheduler: Any, settings: Any) -> str:
    """Remove the command line's default job rate limit from a Snakemake ``scheduler`` (a user's own limit is kept)
    and return the line the Snakefile's ``onstart`` logs about it (it runs before the first job)."""
    limit = getattr(settings, "max_jobs_per_timespan", None)
    if scheduler is None or limit is None or not hasattr(scheduler, "job_rate_limiter"):
        return (
            "onenn: did not take effect: this Snakemake has no workflow.scheduler.job_rate_limiter or "
            "workflow.scheduling_settings.max_jobs_per_timespan (renamed?); the run is correct, its scheduler only "
            "wakes more often (onenn/plan/scheduling.py, docs/performance.md)"
        )
    if scheduler.job_rate_limiter is None:
        return "onenn: nothing to do: this run has no job rate limit"
    if (limit.max_jobs, limit.timespan) != DEFAULT_RATE_LIMIT:  # a limit the user chose
        return f"onenn: kept the job rate limit you chose ({limit.max_jobs} jobs per {limit.timespan} s)"
    scheduler.job_rate_limiter = None
    jobs, seconds = DEFAULT_RATE_LIMIT
    return f"onenn: took effect: removed the default job rate limit ({jobs}/{seconds}s); the scheduler wakes when a job ends"


def visible_gpus(environ: Mapping[str, str] | None = None, driver: Path = NVIDIA_GPUS) -> int:
    """The number of CUDA devices a job started here could use, found without importing torch:
    ``CUDA_VISIBLE_DEVICES`` when it is set (empty or ``-1`` hides every GPU), else the NVIDIA driver's list."""
    listed = (os.environ if environ is None else environ).get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        ids = [i.strip() for i in listed.split(",") if i.strip()]
        return 0 if not ids or ids[0] == "-1" else len(ids)
    return len(list(driver.iterdir())) if driver.is_dir() else 0


def train_gpus(device: str, *, local: bool, gpus_here: int) -> int:
    """GPUs one training job asks for: ``cuda`` one, ``cpu`` none, ``auto`` one on a cluster, or locally
    only where this machine has a GPU (``gpus_here``), so a ``gpu`` limit never serialises CPU training."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    return 0 if device == "cpu" else int(device == "cuda" or not local or gpus_here > 0)
