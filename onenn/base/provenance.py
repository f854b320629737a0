"""Which software produced a result: the versions of Python and of the packages the numbers depend on. Every
run record (``run.json``), and with it every experiment table, and the headline table carry them. And, for the
benchmarks' headers, which machine: ``processors``.

No torch import: ``importlib.metadata`` reads the installed distributions' metadata, so jobs that do not use
torch stay free of it.
"""

from __future__ import annotations

import hashlib
import os
import platform
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

#: the packages whose versions a result records, besides Python
PACKAGES = ("torch", "numba", "numpy", "snakemake")
#: the keys of ``versions()``, in order: python, then ``PACKAGES``
KEYS = ("python", *PACKAGES)
#: the value for a package that is not installed
MISSING = "not installed"


def package_version(name: str) -> str:
    """The installed version of distribution ``name`` (e.g. ``2.13.0+cpu``), or ``MISSING``."""
    try:
        return version(name)
    except PackageNotFoundError:
        return MISSING


def versions() -> dict[str, str]:
    """``{"python": "3.11.7", "torch": ..., "numba": ..., "numpy": ..., "snakemake": ...}`` of this interpreter."""
    return {"python": platform.python_version(), **{name: package_version(name) for name in PACKAGES}}


def describe(found: dict[str, str]) -> str:
    """``python 3.11.7, torch 2.13.0+cpu, numba 0.68.1, numpy 2.4.6, snakemake 9.27.1`` (the keys of ``KEYS``
    present)."""
    return ", ".join(f"{key} {found[key]}" for key in KEYS if key in found)


#: hex digits of a configuration file's SHA-256 that ``config_files`` shows (``sha256sum`` prints all 64)
DIGEST_SHOWN = 12


def config_files(files: Sequence[str | os.PathLike], root: str | os.PathLike) -> str:
    """``config.yaml (sha256 0123456789ab) + workflow/presets/quick.yaml (sha256 ...)``: the configuration files of a
    run in the order they apply, each once (a file given twice applies where it first does), relative to ``root``
    where it lies inside it, with the start of its SHA-256."""
    parts = []
    for path in dict.fromkeys(os.path.realpath(f) for f in files):
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:DIGEST_SHOWN]
        shown = os.path.relpath(path, os.path.realpath(root))
        parts.append(f"{path if shown.startswith(os.pardir) else shown} (sha256 {digest})")
    return " + ".join(parts)


def processors() -> str:
    """``AMD EPYC ..., 2 logical CPUs``: the CPU's model name (from /proc/cpuinfo where there is one) and count."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs"
