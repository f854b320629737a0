"""Benchmarks: ``python -m tools.bench engine|audit|run`` (``--help`` for each; the first two on one thread, in process
CPU, medians of interleaved repetitions; docs/performance.md). The GPU engine: tests/gpu/check.sh."""

import argparse
import csv
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import numba
import numpy as np

from onenn.analysis.markdown import markdown_table
from onenn.base import paths
from onenn.base.io import write_with
from onenn.base.provenance import processors
from onenn.maths.prompts import make_binary_set
from onenn.maths.stream import stream_key
from onenn.plan.experiments import PAPER_EXPERIMENTS
from onenn.theory.audit import AuditSettings, weighted_sample
from onenn.theory.reduced import compiled
from onenn.theory.reduced.loss import _per_prompt_all, prepare
from onenn.theory.reduced.population import nodes, population_loss_grad, quadrature
from onenn.training import cpu_stream
from onenn.training.binary import BinarySettings, FixedSetSGD
from onenn.training.train import TrainSettings, make_engine

ROOT = Path(__file__).resolve().parents[1]
#: the paper's defaults, then longer contexts and more classes; and the binary experiment's defaults
CONFIGS = {"defaults": {}, "N=32": {"N": 32}, "N=64": {"N": 64}, "K=10": {"K": 10}, "binary": None}
#: config.yaml's audit (the settings the timings depend on), and a small one (``--quick``: the tool's test)
AUDIT = AuditSettings(n_plain=16_384, n_max=128, n_gap=128, t1_nodes=128, gap_nodes=64)
QUICK_AUDIT = AuditSettings(n_plain=1024, n_max=16, n_gap=16, t1_nodes=32, gap_nodes=16)
#: where the audit's gradient is evaluated: a point of the early dynamics from sigma = 3
POINT = (4.0, 8.0)
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


def interleaved_medians(runs: dict[str, tuple[Callable[[], object], int, int]], reps: int) -> dict[str, float]:
    """Median CPU seconds per step of each run (name → a call, how many times it is made, the steps they take),
    timed in turn ``reps`` times after a first call of each (compiled, or loaded from numba's cache, before timing)."""
    for call, _, _ in runs.values():
        call()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, (call, calls, steps) in runs.items():
            start = time.process_time()
            for _ in range(calls):
                call()
            times[name].append((time.process_time() - start) / steps)
    return {name: statistics.median(t) for name, t in times.items()}


def document(title: str, *blocks: str) -> str:
    """A benchmark's Markdown file: the title, then the blocks (a note, a table), a blank line after each."""
    return "\n\n".join([f"# {title}", *blocks]) + "\n"


# --- engine -------------------------------------------------------------------------------------------------------
def time_config(s: TrainSettings, steps: int, reps: int) -> dict[str, float]:
    """The engine, the floor and the engine's parts of a multiclass configuration."""
    engine = make_engine(s, "cpu")
    z = np.empty((1, s.d, s.N + 1, s.batch), np.float32)
    c = np.empty((1, s.N, s.batch), np.int64)
    key, blocks = stream_key(s.seed, "minibatches"), max(1, steps // engine.S)

    def floor() -> None:
        for t in range(steps):
            cpu_stream.draw_block(z, c, key, t, 1, s.K, s.d)

    runs = {"engine": (lambda: engine.run(steps), 1, steps), "floor": (floor, 1, steps)}
    runs["prepare"] = (lambda: engine.prepare_block(engine.S), blocks, blocks * engine.S)
    runs["update"] = (lambda: engine.sgd_steps(0, engine.S), blocks, blocks * engine.S)
    return interleaved_medians(runs, reps)


def time_binary(s: BinarySettings, steps: int, reps: int) -> dict[str, float]:
    """The same for the binary experiment, in whole epochs; the floor is the source alone (there is nothing to draw)."""
    sgd = FixedSetSGD(s, make_binary_set("train", s.train_size, s.d, s.N, s.labels, None, seed=s.seed))
    epochs = max(1, steps // sgd.steps_per_epoch)
    full = sgd.engines[0][0]
    blocks = max(1, epochs * sgd.engines[0][1] // full.S)

    def source() -> None:
        for engine, n in sgd.engines:
            for start in range(0, n, engine.S):
                engine.prepare_block(min(engine.S, n - start))

    n = epochs * sgd.steps_per_epoch
    runs = {"engine": (lambda: sgd.run(n), 1, n), "floor": (source, epochs, n)}
    medians = interleaved_medians(runs | {"update": (lambda: full.sgd_steps(0, full.S), blocks, blocks * full.S)}, reps)
    return {**medians, "prepare": medians["floor"]}


def engine(args: argparse.Namespace) -> str:
    numba.set_num_threads(1)
    load = os.getloadavg()[0]
    header = ["config", "d", "N", "K", "batch", "engine µs", "floor µs", "engine/floor", "engine µs/(N+1)"]
    parts_header = ["config", "draws (floor)", "per-block preparation", "SGD step", "rest (loop, saving W)"]
    rows, parts = [], []
    for name in args.configs:
        if CONFIGS[name] is None:
            s = BinarySettings(dtype=args.dtype)
            timed, K = time_binary(s, args.steps, args.reps), 1
        else:
            s = replace(TrainSettings(device="cpu", dtype=args.dtype), **CONFIGS[name])
            timed, K = time_config(s, args.steps, args.reps), s.K
        us = {k: t * 1e6 for k, t in timed.items()}
        ratios = (f"{timed['engine'] / timed['floor']:.2f}", f"{us['engine'] / (s.N + 1):.2f}")
        rows.append([name, *map(str, (s.d, s.N, K, s.batch)), f"{us['engine']:.1f}", f"{us['floor']:.1f}", *ratios])
        rest = us["engine"] - us["prepare"] - us["update"]
        parts.append([name, *(f"{x:.1f}" for x in (us["floor"], us["prepare"] - us["floor"], us["update"], rest))])
    note = (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {processors()}, Python {platform.python_version()}; {args.dtype}, "
        f"1 thread; process CPU time, median of {args.reps} interleaved repetitions of {args.steps} steps; load "
        f"average {load:.2f} at the start. floor: the step's draws alone (binary: the fixed set's source alone)."
    )
    title = "CPU engine benchmark (`python -m tools.bench engine`)"
    where = "Where the engine's time goes (µs per step):"
    return document(title, note, markdown_table(header, rows), where, markdown_table(parts_header, parts))


# --- audit --------------------------------------------------------------------------------------------------------
def _ms(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if np.isfinite(x) else ""


def audit(args: argparse.Namespace) -> str:
    """ms per hot spot, numpy and compiled (the last: compiled only)."""
    s, load = QUICK_AUDIT if args.quick else AUDIT, os.getloadavg()[0]
    t, w, _ = weighted_sample(s)
    prep = prepare(t, w)
    q = quadrature(s.N, s.d, s.t1_nodes, s.gap_nodes, s.seed, third_nodes=s.third_nodes)
    at = nodes(*POINT, q).prepared
    y = (q.uniforms * np.linspace(0.05, 1.0, q.uniforms.shape[1])).ravel()  # F values of the others, as nodes() has
    out = np.empty(y.size)
    runs = {
        "sample numpy": lambda: _per_prompt_all(*POINT, prep, True, compiled=False),
        "sample compiled": lambda: _per_prompt_all(*POINT, prep, True),
        "nodes numpy": lambda: _per_prompt_all(*POINT, at, True, compiled=False),
        "nodes compiled": lambda: _per_prompt_all(*POINT, at, True),
        "interp numpy": lambda: np.interp(y, q.table_cdf, q.table_t),
        "interp compiled": lambda: compiled.interp(y, q.table_cdf, q.table_t, q.table_guide, out),
        "population": lambda: population_loss_grad(*POINT, q),
    }
    medians = interleaved_medians({name: (run, 1, 1) for name, run in runs.items()}, args.reps)
    ms = {name: 1e3 * seconds for name, seconds in medians.items()}
    timed = [
        (f"sample gradient ({len(t)} prompts x N={s.N})", ms["sample numpy"], ms["sample compiled"]),
        (f"population nodes, per prompt ({at.gap_query.size} nodes)", ms["nodes numpy"], ms["nodes compiled"]),
        (f"population nodes, F inverse ({y.size} values)", ms["interp numpy"], ms["interp compiled"]),
        ("population evaluation (population_loss_grad)", float("nan"), ms["population"]),
    ]
    note = (
        f"`python -m tools.bench audit` on {processors()}; 1 thread; process CPU time, median of {args.reps} "
        f"interleaved repetitions; ms per evaluation at (xi1, xi2) = {POINT}; load average {load:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after."
    )
    table = ["| evaluation | numpy ms | compiled ms | numpy / compiled |", "|---|---:|---:|---:|"]
    table += [f"| {what} | {_ms(a)} | {b:.3f} | {_ms(a / b, 2)} |" for what, a, b in timed]
    return document("The audit's hot spots: numpy against compiled", note, "\n".join(table))


# --- run ----------------------------------------------------------------------------------------------------------
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


def run_table(rules: dict[str, RuleTotals], usage: RunUsage | None) -> str:
    """The tree and Snakemake (when run here), every rule, their sums; shares of the tree's CPU, or without a run
    (``usage`` None) of the jobs' CPU."""
    jobs, job_cpu = sum(t.jobs for t in rules.values()), sum(t.cpu_seconds for t in rules.values())
    tree = usage.tree_user + usage.tree_system if usage else job_cpu  # the shares' whole

    def row(part: str, n: object = "", wall="", user="", system="", cpu=0.0, share: str | None = None) -> list[str]:
        share = (f"{100 * cpu / tree:.1f}%" if tree > 0 else "") if share is None else share
        return [part, str(n), wall, user, system, f"{cpu:.1f}", share]

    rows = []
    if usage:
        own = usage.snakemake_user + usage.snakemake_system
        times = (f"{usage.wall:.1f}", f"{usage.tree_user:.1f}", f"{usage.tree_system:.1f}")
        rows.append(row("whole run (process tree)", jobs, *times, tree, "100%"))
        own_times = (f"{usage.snakemake_user:.1f}", f"{usage.snakemake_system:.1f}")
        rows.append(row("Snakemake process itself", "", "", *own_times, own))
    for name, t in rules.items():
        name += f" ({t.unmeasured} without cpu_time)" if t.unmeasured else ""
        rows.append(row(f"rule {name}", t.jobs, f"{t.seconds:.1f}", cpu=t.cpu_seconds))
    rows.append(row("jobs' benchmarks, sum", jobs, f"{sum(t.seconds for t in rules.values()):.1f}", cpu=job_cpu))
    if usage:
        rows.append(row("rest: job start-up, unsampled job CPU", cpu=tree - own - job_cpu))
    whole = "the tree's CPU" if usage else "the jobs' CPU"
    return markdown_table(["part", "jobs", "wall s", "user s", "system s", "CPU s", f"share of {whole}"], rows)


def report(title: str, rules: dict[str, RuleTotals], usage: RunUsage | None, load: float | None = None) -> str:
    """The Markdown file: title, machine, date (and the load average when the run started), the table."""
    started = "" if load is None else f" Load average {load:.2f} when the run started."
    machine = f"{processors()}, Python {platform.python_version()}"
    blocks = [f"Machine: {machine}. Written {time.strftime('%Y-%m-%d %H:%M:%S')}.{started}"]
    if usage and usage.exit_status != 0:
        blocks.append(f"**Snakemake exited with status {usage.exit_status}: the run is not complete.**")
    return document(title, *blocks, run_table(rules, usage))


def run(args: argparse.Namespace) -> str:
    if args.summarise:
        if not (args.summarise / "benchmarks").is_dir():
            raise SystemExit(f"no benchmarks/ folder in {args.summarise}")
        return report(f"Jobs' benchmarks of {args.summarise}", rule_totals(args.summarise / "benchmarks"), None)
    if args.workdir and args.workdir.exists():
        raise SystemExit(f"--workdir {args.workdir} exists; give a new folder")
    arguments = snakemake_arguments(args.target, args.cores, args.snakemake)
    with tempfile.TemporaryDirectory(prefix="onenn-bench-run-") as tmp:
        work, log = args.workdir or Path(tmp) / "workflow", Path(tmp) / "snakemake.log"
        load = os.getloadavg()[0]  # before the run
        usage = run_snakemake(args.source, work, arguments, log)
        if usage.exit_status != 0:
            print(log.read_text()[-4000:], file=sys.stderr)
        title = f"Whole run: `snakemake {' '.join(arguments)}` from an empty results/"
        return report(title, rule_totals(work / "benchmarks"), usage, load)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.split(". ")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("engine", help="µs per step of the CPU engine, its floor and its parts")
    e.add_argument("--dtype", default="float32", choices=["float32", "float64"], help="training precision")
    e.add_argument("--steps", type=int, default=1024, help="steps per repetition")
    e.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    a = sub.add_parser("audit", help="ms per evaluation of the audit's hot spots, numpy against compiled")
    a.add_argument("--quick", action="store_true", help="a small sample and quadrature (a smoke test)")
    for p, reps, output in ((e, 7, "benchmarks/engine.md"), (a, 15, None)):
        where = f"where the table is written (default: {output or 'printed only'})"
        p.add_argument("--reps", type=int, default=reps, help="interleaved repetitions (the median is reported)")
        p.add_argument("--output", type=Path, default=output, help=where)
    r = sub.add_parser("run", help="Snakemake from an empty results/ in a scratch copy: wall and CPU, by rule")
    add = r.add_argument
    add("--target", choices=TARGETS, default="default", help="the full run, experiments 1–6 alone, or the quick preset")
    add("--summarise", type=Path, metavar="DIR", help="only summarise DIR/benchmarks/, run nothing")
    add("--cores", default="all", help="Snakemake's --cores (default: %(default)s)")
    add("--source", type=Path, default=ROOT, help="the checkout whose workflow is copied")
    add("--workdir", type=Path, help="run in this new folder and keep it (default: a temporary one)")
    add("--output", type=Path, help="default: benchmarks/run-TARGET.md, or benchmarks/run-summary.md with --summarise")
    add("snakemake", nargs="*", help="more arguments for Snakemake, after --")
    args = parser.parse_args(argv)
    if args.command == "run" and not args.output:
        args.output = Path("benchmarks") / f"run-{'summary' if args.summarise else args.target}.md"
    return args


def main(argv: Sequence[str] | None = None) -> str:
    """The table of the chosen benchmark, printed and written to ``--output`` (audit: only where one is given)."""
    args = parse(argv)
    text = {"engine": engine, "audit": audit, "run": run}[args.command](args)
    print(text, end="")
    if args.output:
        write_with(args.output, lambda tmp: tmp.write_text(text))
        print(f"written to {args.output}")
    return text


if __name__ == "__main__":
    main()
