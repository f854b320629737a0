"""The whole run's benchmark: ``python -m tools.bench_run --target quick|paper|default`` runs Snakemake from an
empty ``results/`` in a scratch copy of the workflow (``--summarise DIR`` reads a finished run's benchmarks/), and
writes one table to benchmarks/run-TARGET.md: the process tree's wall and CPU, Snakemake's own, and each rule's
(docs/performance.md says how Snakemake samples a job's CPU, and what the row "rest" holds)."""

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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from onenn.base import paths
from onenn.base.io import write_with
from onenn.base.provenance import processors
from onenn.plan.experiments import PAPER_EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("default", "paper", "quick")
#: benchmark folders whose name is not their rule's
FOLDER_RULES = {"tables": "table", "figures": "figure"}
#: Snakemake in a Python process that writes its own CPU (all its threads) as it exits: CHILD USAGE_JSON ARGS...
CHILD = """\
import json, resource, runpy, sys
from onenn.base.io import write_with
path, sys.argv = sys.argv[1], ["snakemake", *sys.argv[2:]]
try:
    runpy.run_module("snakemake", run_name="__main__", alter_sys=True)
finally:
    own = resource.getrusage(resource.RUSAGE_SELF)
    write_with(path, lambda tmp: tmp.write_text(json.dumps({"user": own.ru_utime, "system": own.ru_stime})))
"""


@dataclass
class RuleTotals:
    jobs: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    unmeasured: int = 0  # jobs whose benchmark has no cpu_time (NA: finished before its first sample)


@dataclass
class RunUsage:
    wall: float
    tree_user: float
    tree_system: float
    snakemake_user: float
    snakemake_system: float
    exit_status: int


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


def number(text: str | None) -> float | None:
    try:
        return float(text or "")
    except ValueError:
        return None


def rule_totals(benchmarks: Path) -> dict[str, RuleTotals]:
    """Jobs, summed ``s`` and summed ``cpu_time`` of each rule's benchmark files, the most CPU first."""
    totals: dict[str, RuleTotals] = {}
    for file in sorted(benchmarks.glob("**/*.tsv")):
        t = totals.setdefault(rule_of(PurePosixPath(file.relative_to(benchmarks).as_posix())), RuleTotals())
        t.jobs += 1
        with open(file, newline="") as f:
            for record in csv.DictReader(f, delimiter="\t"):  # one a repeat (one, unless a rule sets `repeat`)
                t.seconds += number(record.get("s")) or 0.0
                cpu = number(record.get("cpu_time"))
                t.cpu_seconds += cpu or 0.0
                t.unmeasured += cpu is None
    return dict(sorted(totals.items(), key=lambda item: -item[1].cpu_seconds))


def snakemake_arguments(target: str, cores: str, extra: Sequence[str] = ()) -> list[str]:
    """Snakemake's command line (after ``snakemake``) for ``target``."""
    arguments = ["--cores", cores, *extra]
    if target == "quick":
        return [*arguments, "--configfile", "config.yaml", "workflow/presets/quick.yaml"]
    if target == "paper":
        tables = [paths.TABLE.format(experiment=e) for e in PAPER_EXPERIMENTS]
        figures = [p.format(experiment=e) for e in PAPER_EXPERIMENTS for p in (paths.FIGURE_PNG, paths.FIGURE_PDF)]
        return [*tables, *figures, *arguments]
    if target == "default":
        return arguments
    raise ValueError(f"target must be one of {', '.join(TARGETS)}; got {target!r}")


def run_snakemake(source: Path, work: Path, arguments: list[str], log: Path) -> RunUsage:
    """Snakemake in ``work``, a copy of checkout ``source``'s workflow, its messages in ``log``; the CPU used."""
    work.mkdir(parents=True)
    for name in ("Snakefile", "config.yaml"):
        shutil.copy(source / name, work / name)
    for name in ("workflow", "onenn"):
        shutil.copytree(source / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    usage_path = work / ".snakemake-usage.json"
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    with open(log, "w") as out:  # a log, streamed: not an output
        command = [sys.executable, "-c", CHILD, str(usage_path), *arguments]
        status = subprocess.run(command, cwd=work, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    own = json.loads(usage_path.read_text())
    tree = (after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime)
    return RunUsage(wall, *tree, own["user"], own["system"], status)


def table(rules: dict[str, RuleTotals], usage: RunUsage | None) -> str:
    """One Markdown table: the tree and Snakemake (when run here), every rule, their sums; shares of the tree's CPU,
    or without a run (``usage`` None) of the jobs' CPU."""
    jobs, job_cpu = sum(t.jobs for t in rules.values()), sum(t.cpu_seconds for t in rules.values())
    tree = usage.tree_user + usage.tree_system if usage else job_cpu  # the shares' whole

    def row(part: str, n: object = "", wall="", user="", system="", cpu=0.0, share: str | None = None) -> str:
        share = (f"{100 * cpu / tree:.1f}%" if tree > 0 else "") if share is None else share
        return f"| {part} | {n} | {wall} | {user} | {system} | {cpu:.1f} | {share} |"

    whole = "the tree's CPU" if usage else "the jobs' CPU"
    lines = [f"| part | jobs | wall s | user s | system s | CPU s | share of {whole} |", "|---" * 7 + "|"]
    if usage:
        own = usage.snakemake_user + usage.snakemake_system
        times = (f"{usage.wall:.1f}", f"{usage.tree_user:.1f}", f"{usage.tree_system:.1f}")
        lines.append(row("whole run (process tree)", jobs, *times, tree, "100%"))
        user, system = f"{usage.snakemake_user:.1f}", f"{usage.snakemake_system:.1f}"
        lines.append(row("Snakemake process itself", "", "", user, system, own))
    for name, t in rules.items():
        name += f" ({t.unmeasured} without cpu_time)" if t.unmeasured else ""
        lines.append(row(f"rule {name}", t.jobs, f"{t.seconds:.1f}", cpu=t.cpu_seconds))
    seconds = sum(t.seconds for t in rules.values())
    lines.append(row("jobs' benchmarks, sum", jobs, f"{seconds:.1f}", cpu=job_cpu))
    if usage:
        lines.append(row("rest: job start-up, unsampled job CPU", cpu=tree - own - job_cpu))
    return "\n".join(lines)


def report(title: str, rules: dict[str, RuleTotals], usage: RunUsage | None, load: float | None = None) -> str:
    """The Markdown file: title, machine, date (and the load average when the run started), the table."""
    started = "" if load is None else f" Load average {load:.2f} when the run started."
    machine = f"{processors()}, Python {platform.python_version()}"
    lines = [f"# {title}", "", f"Machine: {machine}. Written {time.strftime('%Y-%m-%d %H:%M:%S')}.{started}", ""]
    if usage and usage.exit_status != 0:
        lines += [f"**Snakemake exited with status {usage.exit_status}: the run is not complete.**", ""]
    return "\n".join([*lines, table(rules, usage), ""])


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tools.bench_run", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--target", choices=TARGETS, default="default", help="the full run, experiments 1–6 alone, or the quick preset")
    add("--summarise", type=Path, metavar="DIR", help="only summarise DIR/benchmarks/, run nothing")
    add("--cores", default="all", help="Snakemake's --cores (default: %(default)s)")
    add("--source", type=Path, default=ROOT, help="the checkout whose workflow is copied")
    add("--workdir", type=Path, help="run in this new folder and keep it (default: a temporary one)")
    add("--output", type=Path, help="default: benchmarks/run-TARGET.md, or benchmarks/run-summary.md with --summarise")
    add("snakemake", nargs="*", help="more arguments for Snakemake, after --")
    args = parser.parse_args(argv)
    args.output = args.output or Path("benchmarks") / f"run-{'summary' if args.summarise else args.target}.md"
    return args


def main(argv: Sequence[str] | None = None) -> str:
    args = parse(argv)
    if args.summarise:
        if not (args.summarise / "benchmarks").is_dir():
            raise SystemExit(f"no benchmarks/ folder in {args.summarise}")
        text = report(f"Jobs' benchmarks of {args.summarise}", rule_totals(args.summarise / "benchmarks"), None)
    else:
        if args.workdir and args.workdir.exists():
            raise SystemExit(f"--workdir {args.workdir} exists; give a new folder")
        arguments = snakemake_arguments(args.target, args.cores, args.snakemake)
        with tempfile.TemporaryDirectory(prefix="onenn-bench-run-") as tmp:
            work, log = args.workdir or Path(tmp) / "workflow", Path(tmp) / "snakemake.log"
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            usage = run_snakemake(args.source, work, arguments, log)
            if usage.exit_status != 0:
                print(log.read_text()[-4000:], file=sys.stderr)
            title = f"Whole run: `snakemake {' '.join(arguments)}` from an empty results/"
            text = report(title, rule_totals(work / "benchmarks"), usage, load)
    print(text)
    write_with(args.output, lambda tmp: tmp.write_text(text))
    return text


if __name__ == "__main__":
    main()
