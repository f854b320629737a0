"""Run the workflow through Snakemake in a temporary copy (shared by the end-to-end tests)."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests.configs import QUICK as QUICK_CONFIGS
from tests.configs import ROOT

QUICK = ["--configfile", *QUICK_CONFIGS]


def snakemake(workdir: Path, *args: str, configfiles: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Snakemake on the quick preset in ``workdir``; ``configfiles`` are layered on top of it."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *QUICK, *configfiles, *args]
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=1200, check=False)


def copy_workflow(dest: Path) -> Path:
    for name in ("Snakefile", "config.yaml"):
        shutil.copy(ROOT / name, dest / name)
    for name in ("workflow", "onenn"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest
