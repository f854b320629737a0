"""Check a Snakemake run through Slurm: every job ran inside a Slurm job, Slurm recorded those jobs as
completed, training jobs got a GPU on partition gpu and the others ran on partition cpu, and the results equal
a local run's, bit for bit. Prints a summary; exits 1 when a check fails.

    python tests/slurm/check_cluster_run.py --run DIR --log FILE --reference DIR [--jobcomp FILE]
        [--cpu-run DIR --cpu-log FILE]

DIR is a workflow folder (Snakefile, results/, .snakemake/slurm_logs/); FILE is Snakemake's output there.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

SUBMITTED = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")
STATS_ROW = re.compile(r"^(\w+)\s+(\d+)$")
LOCALRULE = re.compile(r"^\s*localrule (\w+):$")  # a job as Snakemake runs it inside a Slurm job step


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str) -> None:
        self.lines.append(f"  [{'ok' if ok else 'FAIL'}] {what}")
        if not ok:
            self.failures.append(what)

    def note(self, what: str) -> None:
        self.lines.append(f"  {what}")


def submitted_jobs(log: str) -> list[tuple[str, int, Path]]:
    """(Snakemake job or group id, Slurm job id, Slurm log) of every submission in Snakemake's output."""
    return [(m[1], int(m[2]), Path(m[3])) for m in SUBMITTED.finditer(log)]


def planned_jobs(log: str) -> Counter:
    """Jobs per rule from the first 'Job stats' table of Snakemake's output."""
    counts: Counter = Counter()
    lines = log.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Job stats:"))
    for line in lines[start + 3 :]:
        row = STATS_ROW.match(line.strip())
        if not row or row[1] == "total":
            break
        counts[row[1]] = int(row[2])
    return counts


def jobs_run_in_slurm(slurm_logs: list[Path]) -> Counter:
    """Jobs per rule that Snakemake executed inside the given Slurm jobs (each job step logs 'localrule X:')."""
    counts: Counter = Counter()
    for path in slurm_logs:
        for line in path.read_text(errors="replace").splitlines():
            if m := LOCALRULE.match(line):
                counts[m[1]] += 1
    return counts


def jobcomp_records(path: Path | None) -> dict[int, dict[str, str]]:
    """Slurm's completion log (jobcomp/filetxt): job id -> its fields (JobState, Partition, times, ...)."""
    records: dict[int, dict[str, str]] = {}
    if path is None or not path.exists():
        return records
    for line in path.read_text().splitlines():
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        if "JobId" in fields:
            records[int(fields["JobId"])] = fields
    return records


def scontrol_record(job_id: int) -> dict[str, str]:
    """`scontrol show job -o`; empty once Slurm has forgotten the job (MinJobAge after it finished)."""
    out = subprocess.run(["scontrol", "show", "job", "-o", str(job_id)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {}
    return dict(item.split("=", 1) for item in out.stdout.split() if "=" in item)


#: wall-clock timings that the binary experiment's run records (and its table) held before they moved to the jobs'
#: logs; a reference folder made by such a version still has them, so they are left out of the comparison
TIMINGS = ("seconds", "ms_per_step")
#: where the code came from (onenn.base.provenance.source): the reference is a checkout, the Slurm run a copy of it,
#: so `git <commit>` against `onenn <version>`; the code itself (`code`, its fingerprint) is compared
CODE_FROM = "code_from"
#: the headline table's Markdown names it too: "... onenn code <fingerprint> from <where>."
MADE_FROM = re.compile(r"(onenn code [0-9a-f]+) from .*$", re.MULTILINE)
LEFT_OUT = (*TIMINGS, CODE_FROM)


def same_file(a: Path, b: Path) -> bool:
    """Bitwise equality of what a file holds: tables cell by cell with their types, arrays element by element,
    run records key by key; wall-clock timings and where the code came from (``LEFT_OUT``) left out."""
    if a.suffix == ".parquet":
        x, y = (pd.read_parquet(p).drop(columns=list(LEFT_OUT), errors="ignore") for p in (a, b))
        try:
            pd.testing.assert_frame_equal(x, y, check_exact=True)
            return True
        except AssertionError:
            return False
    if a.suffix == ".npz":
        with np.load(a) as x, np.load(b) as y:
            return sorted(x.files) == sorted(y.files) and all(np.array_equal(x[k], y[k]) for k in x.files)
    if a.suffix == ".json":
        x, y = ({k: v for k, v in json.loads(p.read_text()).items() if k not in LEFT_OUT} for p in (a, b))
        return x == y
    if a.suffix == ".md":
        return MADE_FROM.sub(r"\1", a.read_text()) == MADE_FROM.sub(r"\1", b.read_text())
    return a.read_bytes() == b.read_bytes()


#: in a reference folder (a checkout), but not made by the run itself: the report, and the README's files (the
#: explicit target readme writes them)
NOT_PRODUCED = ("results/report.html", "results/readme")
COMPARED = (".parquet", ".npz", ".json", ".md")  # figures (PNG, PDF) embed dates and renderer details


def compare_results(run: Path, reference: Path, report: Report) -> None:
    mine = {p.relative_to(run) for p in (run / "results").rglob("*") if p.is_file() and not p.name.startswith(".")}
    theirs = {
        p.relative_to(reference)
        for p in (reference / "results").rglob("*")
        if p.is_file() and not p.name.startswith(".") and not str(p.relative_to(reference)).startswith(NOT_PRODUCED)
    }
    report.check(
        mine == theirs,
        f"same {len(theirs)} result files as the local run"
        + (
            ""
            if mine == theirs
            else f" (only Slurm: {sorted(mine - theirs)[:5]}, only local: {sorted(theirs - mine)[:5]})"
        ),
    )
    by_kind: Counter = Counter()
    differ = []
    for rel in sorted(mine & theirs):
        if rel.suffix not in COMPARED:
            continue
        by_kind[rel.suffix] += 1
        if not same_file(run / rel, reference / rel):
            differ.append(str(rel))
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(by_kind.items()))
    report.check(
        not differ,
        f"equal to the local run, bit for bit: {kinds} ({', '.join(LEFT_OUT)} left out)"
        + (f"; DIFFERENT: {differ[:10]}" if differ else ""),
    )


def job_record(job_id: int, jobcomp: dict) -> dict[str, str]:
    """What Slurm knows of a job: ``scontrol show job`` (GPUs included), else its completion-log entry."""
    return scontrol_record(job_id) or jobcomp.get(job_id, {})


def uses_gpu(record: dict[str, str]) -> bool:
    return "gpu:1" in record.get("TresPerJob", "")


def check_slurm_jobs(jobs: list[tuple[str, int, Path]], jobcomp: dict, report: Report) -> None:
    """Every job COMPLETED; training jobs on partition gpu with one GPU (sbatch --gpus=1), the others on cpu
    without one."""
    ids = [j for _, j, _ in jobs]
    report.check(bool(ids), f"{len(ids)} Slurm jobs submitted: ids {', '.join(map(str, ids))}")
    records = {job_id: job_record(job_id, jobcomp) for job_id in ids}
    done = [j for j, rec in records.items() if rec.get("JobState") == "COMPLETED"]
    report.check(
        len(done) == len(ids), f"Slurm records them COMPLETED (scontrol / jobcomp.txt): {len(done)}/{len(ids)}"
    )
    training = {job_id for _, job_id, log in jobs if jobs_run_in_slurm([log])["train"]}
    on_gpu = [j for j in training if records[j].get("Partition") == "gpu" and uses_gpu(records[j])]
    report.check(
        bool(training) and len(on_gpu) == len(training),
        f"training jobs on partition gpu with one GPU each (TresPerJob=gres:gpu:1): {len(on_gpu)}/{len(training)}",
    )
    others = [j for j in ids if j not in training]
    on_cpu = [j for j in others if records[j].get("Partition") == "cpu" and not uses_gpu(records[j])]
    report.check(len(on_cpu) == len(others), f"the other jobs on partition cpu, no GPU: {len(on_cpu)}/{len(others)}")
    for name, job_id, log in jobs:
        rec = records[job_id]
        report.note(
            f"job {job_id}: {log.parent.name}/{log.name} {rec.get('Partition', '?')} "
            f"{rec.get('TresPerJob', '') or '-'} {rec.get('StartTime', '')} -> {rec.get('EndTime', '')}"
        )


def check_run(run: Path, log_path: Path, jobcomp: dict, report: Report) -> None:
    log = log_path.read_text(errors="replace")
    report.check("steps (100%) done" in log, "Snakemake finished every job")
    jobs = submitted_jobs(log)
    check_slurm_jobs(jobs, jobcomp, report)
    planned = planned_jobs(log)
    local_rules = {"all"}  # rule all only collects the targets
    expected = Counter({r: n for r, n in planned.items() if r not in local_rules})
    ran = jobs_run_in_slurm([p for _, _, p in jobs])
    per_rule = ", ".join(f"{r} {n}" for r, n in sorted(expected.items()))
    report.check(
        ran == expected,
        f"every job ran inside a Slurm job ({sum(ran.values())} of "
        f"{sum(expected.values())}: {per_rule})" + ("" if ran == expected else f"; ran in Slurm: {dict(ran)}"),
    )


def check_cpu_run(run: Path, log_path: Path, reference: Path, jobcomp: dict, report: Report) -> None:
    """The slurm-cpu profile: the training job goes to partition cpu, with no GPU."""
    log = log_path.read_text(errors="replace")
    jobs = submitted_jobs(log)
    report.check(
        len(jobs) == 1 and "steps (100%) done" in log, f"one training job through Slurm: ids {[j for _, j, _ in jobs]}"
    )
    for _, job_id, slurm_log in jobs:
        rec = job_record(job_id, jobcomp)
        report.check(
            rec.get("JobState") == "COMPLETED"
            and rec.get("Partition") == "cpu"
            and not uses_gpu(rec)
            and jobs_run_in_slurm([slurm_log])["train"] == 1,
            f"job {job_id}: rule train, {rec.get('JobState')} on partition {rec.get('Partition')}, "
            f"TresPerJob={rec.get('TresPerJob') or '-'}",
        )
    for weights in (run / "results/runs").rglob("weights.npz"):
        rel = weights.relative_to(run)
        record = json.loads((weights.parent / "run.json").read_text())
        report.check(
            same_file(weights, reference / rel),
            f"{rel} equal to the local run's (device {record.get('device', '?')} -> {record.get('device_used', '?')})",
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--jobcomp", type=Path)
    parser.add_argument("--cpu-run", type=Path)
    parser.add_argument("--cpu-log", type=Path)
    args = parser.parse_args()
    jobcomp = jobcomp_records(args.jobcomp)
    report = Report()
    report.note("slurm profile, quick preset:")
    check_run(args.run, args.log, jobcomp, report)
    compare_results(args.run, args.reference, report)
    if args.cpu_run:
        report.note("slurm-cpu profile, one training run:")
        check_cpu_run(args.cpu_run, args.cpu_log, args.reference, jobcomp, report)
    print("\n".join(report.lines))
    if report.failures:
        print(f"FAILED: {len(report.failures)} check(s)")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
