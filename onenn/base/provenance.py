"""Which software produced a result: Python's and the packages' versions (from their metadata: no torch import),
the GPU a run used, onenn's code (fingerprint and git commit); and, for the benchmarks, which machine."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version

from onenn.base.fingerprint import SOURCE_ROOT, fingerprint

#: the packages whose versions a result records besides Python's: those that shape a number, and snakemake
PACKAGES = ("torch", "numba", "numpy", "snakemake", "scipy", "pandas", "pyarrow", "seaborn", "triton")
#: the keys of ``versions()``, in order: python, then ``PACKAGES``
KEYS = ("python", *PACKAGES)
#: the value for a package that is not installed
MISSING = "not installed"
#: the keys of ``accelerator()``: the GPU a training run used (its model) and the CUDA version of torch's build
ACCELERATOR_KEYS = ("gpu", "cuda")
#: their value where the process used no GPU
NO_GPU = "none"


def package_version(name: str) -> str:
    """The installed version of distribution ``name`` (``2.13.0+cpu``), or ``MISSING``."""
    try:
        return version(name)
    except PackageNotFoundError:
        return MISSING


def versions() -> dict[str, str]:
    """``{"python": "3.11.7", "torch": ..., "numba": ..., ..., "triton": ...}`` of this interpreter (``KEYS``)."""
    return {"python": platform.python_version(), **{name: package_version(name) for name in PACKAGES}}


def accelerator() -> dict[str, str]:
    """``{"gpu": "NVIDIA H200", "cuda": "12.8"}`` where this process has imported torch and initialised CUDA; else
    both ``NO_GPU``."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return {"gpu": torch.cuda.get_device_name(), "cuda": str(torch.version.cuda)}
    except (AttributeError, RuntimeError):
        pass
    return dict.fromkeys(ACCELERATOR_KEYS, NO_GPU)


def gpus_used(values: Iterable[object]) -> str:
    """The distinct GPUs (or CUDA versions) of a set of runs' records, sorted and joined by ``; ``, or ``NO_GPU``."""
    return "; ".join(sorted({str(v) for v in values} - {NO_GPU})) or NO_GPU


def describe(found: dict[str, str]) -> str:
    """``python 3.11.7, torch 2.13.0+cpu, ...`` (``KEYS``), ``, on NVIDIA H200 with CUDA 12.8`` (a GPU), ``, onenn
    code 0123456789ab from git 0123456789ab (modified)`` (``CODE_KEYS``): what of these ``found`` has."""
    text = ", ".join(f"{key} {found[key]}" for key in KEYS if key in found)
    if found.get("gpu", NO_GPU) != NO_GPU:
        text += f", on {found['gpu']} with CUDA {found.get('cuda')}"
    if "code" in found:
        text += f", onenn code {found['code']}" + (f" from {found['code_from']}" if "code_from" in found else "")
    return text


#: the keys of ``code_provenance()``: the fingerprint of the code a job ran, and where that code came from
CODE_KEYS = ("code", "code_from")

#: what the columns of ``versions()``, ``accelerator()`` and ``code_provenance()`` mean, where a table has them
DESCRIPTIONS = {
    "python": "the Python version",
    **{package: f"the installed version of {package} (`{MISSING}` where it is not)" for package in PACKAGES},
    "gpu": f"the GPU model the run trained on, `{NO_GPU}` on the CPU",
    "cuda": f"the CUDA version of torch's build on that GPU, `{NO_GPU}` on the CPU",
    "code": "fingerprint of the onenn code the job ran (onenn.base.fingerprint)",
    "code_from": "where that code came from: `git <commit>`, `(modified)` if the checkout differed, else the version",
}


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(SOURCE_ROOT), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@functools.cache
def source() -> str:
    """``git 0123456789ab`` (the checkout's commit; ``(modified)`` where onenn/, workflow/, Snakefile differ), else
    ``onenn 0.1.0`` (the installed version)."""
    try:
        if os.path.realpath(_git("rev-parse", "--show-toplevel")) == os.path.realpath(SOURCE_ROOT):
            commit = _git("rev-parse", "--short=12", "HEAD")
            changed = _git("status", "--porcelain", "--untracked-files=no", "--", "onenn", "workflow", "Snakefile")
            return f"git {commit}" + (" (modified)" if changed else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    return f"onenn {package_version('onenn')}"


def code_provenance(*entries: str) -> dict[str, str]:
    """``{"code": fingerprint, "code_from": source()}`` of the code ``entries`` run (``onenn.jobs.train:train_job``)."""
    return {"code": fingerprint(*entries), "code_from": source()}


def config_files(files: Sequence[str | os.PathLike], root: str | os.PathLike) -> str:
    """``config.yaml (sha256 0123456789ab) + workflow/presets/quick.yaml (sha256 ...)``: a run's configuration
    files in the order they apply, each once, relative to ``root`` where they lie inside it."""
    parts = []
    for path in dict.fromkeys(os.path.realpath(f) for f in files):
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:12]  # of the 64 that sha256sum prints
        shown = os.path.relpath(path, os.path.realpath(root))
        parts.append(f"{path if shown.startswith(os.pardir) else shown} (sha256 {digest})")
    return " + ".join(parts)


def processors() -> str:
    """``AMD EPYC ..., 2 logical CPUs``: the CPU's model (from /proc/cpuinfo where there is one) and count."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs"
