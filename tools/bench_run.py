"""The benchmark of a whole run: Snakemake from an empty ``results/`` in a scratch copy of the workflow.

    python -m tools.bench_run                    # the default target (the full run, about 25 min on 2 cores)
    python -m tools.bench_run --target paper     # the paper's experiments 1–6 alone
    python -m tools.bench_run --target quick     # the quick preset, a few minutes
    python -m tools.bench_run --summarise DIR    # an existing run folder's benchmarks/, without running

One table: the wall time and the user and system CPU of the whole process tree (Snakemake and every job, from
the ``RUSAGE_CHILDREN`` of this process), the Snakemake process's own CPU (its ``RUSAGE_SELF``, written by the
process itself as it exits), and for each rule its jobs and the sums of the ``s`` (wall) and ``cpu_time``
columns of their Snakemake benchmark files (``benchmarks/**/*.tsv``). Snakemake samples a job's processes every
0.5 s for its first 15 s, then every 30 s, and ``cpu_time`` is the last sample: the CPU a job spends after its
last sample (at most 0.5 s in its first 15 s, up to 30 s later) is missed. The table is printed and written to
``--output`` (atomically; by default ``benchmarks/run-TARGET.md``, or ``benchmarks/run-summary.md`` with
``--summarise``). No torch: only the standard library and onenn.base.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from onenn.base import paths
from onenn.base.io import write_with
from onenn.base.provenance import processors
from onenn.plan.experiments import PAPER_EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]
#: what a scratch copy of the workflow holds (as the end-to-end tests copy it)
WORKFLOW_FILES = ("Snakefile", "config.yaml")
WORKFLOW_FOLDERS = ("workflow", "onenn")
QUICK = ("config.yaml", "workflow/presets/quick.yaml")
TARGETS = ("default", "paper", "quick")

#: Snakemake run inside this Python process, which writes its own CPU time (all its threads) as it exits:
#: ``python -c CHILD USAGE_JSON snakemake-arguments...``
CHILD = """\
import json, resource, runpy, sys
from onenn.base.io import write_with
usage_path = sys.argv[1]
sys.argv = ["snakemake", *sys.argv[2:]]
code = 0
try:
    runpy.run_module("snakemake", run_name="__main__", alter_sys=True)
except SystemExit as exit:
    code = exit.code
finally:
    own = resource.getrusage(resource.RUSAGE_SELF)
    usage = json.dumps({"user": own.ru_utime, "system": own.ru_stime})
    write_with(usage_path, lambda tmp: tmp.write_text(usage))
sys.exit(code)
"""

#: benchmark folders whose name is not their rule's
FOLDER_RULES = {"tables": "table", "figures": "figure"}


def rule_of(path: PurePosixPath) -> str:
    """The rule of a benchmark file, from its path under ``benchmarks/`` (workflow/rules/*.smk)."""
    parts = path.parts
    if len(parts) == 1:
        return path.stem  # summary.tsv, report_table.tsv, claims.tsv, claims_page.tsv
    if parts[0] == "datasets":
        if parts[1] == "binary":
            return "binary_set_separated" if parts[2] == "separated" else "binary_set"
        return f"test_set_{parts[1]}"
    return FOLDER_RULES.get(parts[0], parts[0])


@dataclass
class RuleTotals:
    jobs: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    unmeasured: int = 0  # jobs whose benchmark has no cpu_time (NA: finished before its first sample)


def number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def rule_totals(benchmarks: Path) -> dict[str, RuleTotals]:
    """Jobs, summed ``s`` and summed ``cpu_time`` of each rule's benchmark files under ``benchmarks``, by rule."""
    totals: dict[str, RuleTotals] = {}
    for file in sorted(benchmarks.glob("**/*.tsv")):
        with open(file, newline="") as f:
            records = list(csv.DictReader(f, delimiter="\t"))
        t = totals.setdefault(rule_of(PurePosixPath(file.relative_to(benchmarks).as_posix())), RuleTotals())
        t.jobs += 1
        for record in records:  # one a repeat (one, unless a rule sets `repeat`)
            t.seconds += number(record.get("s", "")) or 0.0
            cpu = number(record.get("cpu_time", ""))
            t.cpu_seconds += cpu or 0.0
            t.unmeasured += cpu is None
    return dict(sorted(totals.items(), key=lambda item: -item[1].cpu_seconds))


@dataclass
class RunUsage:
    wall: float
    tree_user: float
    tree_system: float
    snakemake_user: float
    snakemake_system: float
    exit_status: int


def copy_workflow(source: Path, dest: Path) -> None:
    """The workflow of ``source`` (a checkout) in ``dest``, without results, logs or benchmarks."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        shutil.copy(source / name, dest / name)
    for name in WORKFLOW_FOLDERS:
        shutil.copytree(source / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))


def snakemake_arguments(target: str, cores: str, extra: Iterable[str] = ()) -> list[str]:
    """Snakemake's command line (after ``snakemake``) for ``target``."""
    arguments = ["--cores", cores, *extra]
    if target == "quick":
        return [*arguments, "--configfile", *QUICK]
    if target == "paper":
        tables = [paths.TABLE.format(experiment=e) for e in PAPER_EXPERIMENTS]
        figures = [p.format(experiment=e) for e in PAPER_EXPERIMENTS for p in (paths.FIGURE_PNG, paths.FIGURE_PDF)]
        return [*tables, *figures, *arguments]
    if target == "default":
        return arguments
    raise ValueError(f"target must be one of {', '.join(TARGETS)}; got {target!r}")


def run_snakemake(work: Path, arguments: list[str], log: Path) -> RunUsage:
    """Snakemake with ``arguments`` in ``work``, its messages in ``log``; the CPU of the tree and of Snakemake."""
    usage_path = work / ".snakemake-usage.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(log, "w") as out:  # a log, streamed: not an output
        process = subprocess.run(
            [sys.executable, "-c", CHILD, str(usage_path), *arguments],
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = json.loads(usage_path.read_text())
    return RunUsage(
        wall=wall,
        tree_user=after.ru_utime - before.ru_utime,
        tree_system=after.ru_stime - before.ru_stime,
        snakemake_user=own["user"],
        snakemake_system=own["system"],
        exit_status=process.returncode,
    )


def share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole > 0 else ""


def row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(rules: dict[str, RuleTotals], usage: RunUsage | None) -> str:
    """One markdown table: the whole tree and Snakemake (when run here), then every rule, then their sums; shares
    are of the tree's CPU, or without a run (``usage`` None) of the jobs' CPU."""
    whole = "the tree's CPU" if usage else "the jobs' CPU"
    lines = [row("part", "jobs", "wall s", "user s", "system s", "CPU s", f"share of {whole}"), "|---" * 7 + "|"]
    jobs = sum(t.jobs for t in rules.values())
    job_cpu = sum(t.cpu_seconds for t in rules.values())
    tree = usage.tree_user + usage.tree_system if usage else job_cpu  # the shares' whole
    if usage:
        own = usage.snakemake_user + usage.snakemake_system
        u, s = usage.tree_user, usage.tree_system
        lines.append(
            row("whole run (process tree)", jobs, f"{usage.wall:.1f}", f"{u:.1f}", f"{s:.1f}", f"{tree:.1f}", "100%")
        )
        u, s = usage.snakemake_user, usage.snakemake_system
        lines.append(row("Snakemake process itself", "", "", f"{u:.1f}", f"{s:.1f}", f"{own:.1f}", share(own, tree)))
    for name, t in rules.items():
        name += f" ({t.unmeasured} without cpu_time)" if t.unmeasured else ""
        cpu = t.cpu_seconds
        lines.append(row(f"rule {name}", t.jobs, f"{t.seconds:.1f}", "", "", f"{cpu:.1f}", share(cpu, tree)))
    seconds = sum(t.seconds for t in rules.values())
    lines.append(row("jobs' benchmarks, sum", jobs, f"{seconds:.1f}", "", "", f"{job_cpu:.1f}", share(job_cpu, tree)))
    if usage:
        rest = tree - own - job_cpu
        lines.append(row("rest: job start-up, unsampled job CPU", "", "", "", "", f"{rest:.1f}", share(rest, tree)))
    return "\n".join(lines)


def machine() -> str:
    return f"{processors()}, Python {platform.python_version()}"


def report(title: str, rules: dict[str, RuleTotals], usage: RunUsage | None, load: float | None = None) -> str:
    """The Markdown file: title, machine, date (and the load average when the run started), the table."""
    started = "" if load is None else f" Load average {load:.2f} when the run started."
    lines = [f"# {title}", "", f"Machine: {machine()}. Written {time.strftime('%Y-%m-%d %H:%M:%S')}.{started}", ""]
    if usage and usage.exit_status != 0:
        lines += [f"**Snakemake exited with status {usage.exit_status}: the run is not complete.**", ""]
    return "\n".join([*lines, table(rules, usage), ""])


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_run",
        description="Benchmark a whole run of the workflow from an empty results/ in a scratch copy, or summarise "
        "an existing run's benchmarks/. Arguments after -- go to Snakemake.",
    )
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default="default",
        help="default: the full run's default "
        "target; paper: experiments 1–6 alone; quick: the quick preset (default: %(default)s)",
    )
    parser.add_argument("--summarise", type=Path, metavar="DIR", help="only summarise DIR/benchmarks/, run nothing")
    parser.add_argument("--cores", default="all", help="Snakemake's --cores (default: %(default)s)")
    parser.add_argument("--source", type=Path, default=ROOT, help="the checkout whose workflow is copied")
    parser.add_argument("--workdir", type=Path, help="run in this new folder and keep it (default: a temporary one)")
    parser.add_argument(
        "--output", type=Path, help="default: benchmarks/run-TARGET.md, or benchmarks/run-summary.md with --summarise"
    )
    parser.add_argument("snakemake", nargs="*", help="more arguments for Snakemake, after --")
    return parser.parse_args(argv)


def default_output(args: argparse.Namespace) -> Path:
    """One file a target, so that the quick preset's table does not overwrite the full run's."""
    return Path("benchmarks") / f"run-{'summary' if args.summarise else args.target}.md"


def run(args: argparse.Namespace) -> str:
    arguments = snakemake_arguments(args.target, args.cores, args.snakemake)
    title = f"Whole run: `snakemake {' '.join(arguments)}` from an empty results/"
    with tempfile.TemporaryDirectory(prefix="onenn-bench-run-") as tmp:
        work = args.workdir or Path(tmp) / "workflow"
        if args.workdir and args.workdir.exists():
            raise SystemExit(f"--workdir {args.workdir} exists; give a new folder")
        copy_workflow(args.source, work)
        log = Path(tmp) / "snakemake.log"
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        usage = run_snakemake(work, arguments, log)
        if usage.exit_status != 0:
            print(log.read_text()[-4000:], file=sys.stderr)
        return report(title, rule_totals(work / "benchmarks"), usage, load)


def main(argv: list[str] | None = None) -> str:
    args = parse(argv)
    if args.summarise:
        benchmarks = args.summarise / "benchmarks"
        if not benchmarks.is_dir():
            raise SystemExit(f"no benchmarks/ folder in {args.summarise}")
        text = report(f"Jobs' benchmarks of {args.summarise}", rule_totals(benchmarks), None)
    else:
        text = run(args)
    print(text)
    write_with(args.output or default_output(args), lambda tmp: tmp.write_text(text))
    return text


if __name__ == "__main__":
    main()
