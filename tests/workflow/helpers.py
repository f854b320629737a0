"""Run the workflow through Snakemake in a temporary copy (shared by the end-to-end tests)."""

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.configs import QUICK as QUICK_CONFIGS
from tests.configs import ROOT

QUICK = ["--configfile", *QUICK_CONFIGS]


def snakemake_command(*args: str, configfiles: tuple[str, ...] = ()) -> list[str]:
    """Snakemake on the quick preset; ``configfiles`` are layered on top of it."""
    return [sys.executable, "-m", "snakemake", "--cores", "2", *QUICK, *configfiles, *args]


def snakemake(workdir: Path, *args: str, configfiles: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``snakemake_command`` run in ``workdir``."""
    cmd = snakemake_command(*args, configfiles=configfiles)
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=1200, check=False)


def copy_workflow(dest: Path) -> Path:
    for name in ("Snakefile", "config.yaml"):
        shutil.copy(ROOT / name, dest / name)
    for name in ("workflow", "onenn"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


JOB_HEADER = re.compile(r"^(?:local)?rule (\w+):$")
WILDCARD = re.compile(r"(\w+)=(.*?)(?=, \w+=|$)")


@dataclass
class Job:
    rule: str
    wildcards: dict[str, str] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    reason: str = ""


def parse_plan(text: str) -> list[Job]:
    """The jobs of a dry run's output (rule `all`, which only collects targets, left out)."""
    jobs: list[Job] = []
    for line in text.splitlines():
        if m := JOB_HEADER.match(line.strip()):
            jobs.append(Job(m[1]))
        elif jobs and line.startswith("    "):
            key, _, value = line.strip().partition(": ")
            if key == "wildcards":
                jobs[-1].wildcards = dict(WILDCARD.findall(value))
            elif key == "output":
                jobs[-1].outputs = value.split(", ")
            elif key == "reason":
                jobs[-1].reason = value
    return [job for job in jobs if job.rule != "all"]


def report_data(page: str, name: str) -> dict:
    """A JSON object the report embeds as ``<script id="name"> var name = {...}; </script>``."""
    found = re.search(rf'<script id="{name}">\s*var {name} = (.*?);?\s*</script>', page, re.DOTALL)
    return json.loads(found[1].strip().rstrip(";"))
