"""What a workflow job asks the scheduler for (``resources: gpu=...``, ``sbatch --gpus`` on Slurm). No torch."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from onenn.base.settings import DEVICES

NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # one folder per GPU the NVIDIA driver sees


def visible_gpus(environ: Mapping[str, str] | None = None, driver: Path = NVIDIA_GPUS) -> int:
    """The number of CUDA devices a job started here could use, found without importing torch:
    ``CUDA_VISIBLE_DEVICES`` when it is set (empty or ``-1`` hides every GPU), else the NVIDIA driver's list."""
    environ = os.environ if environ is None else environ
    listed = environ.get("CUDA_VISIBLE_DEVICES")
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
