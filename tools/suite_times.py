"""The test suite's time, room by room: each folder of tests/ run alone by pytest (the default run's tests: not
``slow``), one after the other, with its tests, its wall time and its CPU (pytest and every process it started).

    python -m tools.suite_times                        # tests/unit, tests/tools, tests/repo, tests/workflow
    python -m tools.suite_times tests/unit tests/repo  # chosen folders

The table is printed and written to ``--output`` (atomically; by default ``benchmarks/tests.md``), naming the
machine, the date and the load average it started under (a loaded machine makes every number larger).
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from onenn.base.io import write_with
from onenn.base.provenance import processors
from tools.repeat_tests import outcomes

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("tests/unit", "tests/tools", "tests/repo", "tests/workflow")


@dataclass(frozen=True)
class RoomTime:
    room: str
    passed: int
    failed: int
    skipped: int
    wall: float
    cpu: float


def counts(junit_xml: Path) -> tuple[int, int, int]:
    """(passed, failed, skipped) test cases of a JUnit XML report (errors count as failed)."""
    found = Counter(outcome for _, outcome in outcomes(junit_xml))
    return found["passed"], found["failed"], found["skipped"]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_room(room: str, extra: Sequence[str] = ()) -> RoomTime:
    """Run pytest on one folder, in a process of its own, and measure it."""
    with tempfile.TemporaryDirectory(prefix="onenn-suite-times-") as tmp:
        report = Path(tmp) / "report.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"]
        cpu, started = children_cpu(), time.monotonic()
        subprocess.run([*command, *extra, room], cwd=ROOT, check=False)
        wall, cpu = time.monotonic() - started, children_cpu() - cpu
        passed, failed, skipped = counts(report) if report.exists() else (0, 0, 0)
    return RoomTime(room, passed, failed, skipped, wall, cpu)


def table(rows: Sequence[RoomTime]) -> str:
    lines = ["| room | passed | failed | skipped | wall s | CPU s |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r.room}` | {r.passed} | {r.failed} | {r.skipped} | {r.wall:.0f} | {r.cpu:.0f} |")
    total = [sum(getattr(r, k) for r in rows) for k in ("passed", "failed", "skipped", "wall", "cpu")]
    lines.append("| all | {} | {} | {} | {:.0f} | {:.0f} |".format(*total))
    return "\n".join(lines)


def report(rows: Sequence[RoomTime], load: float) -> str:
    today = datetime.date.today().isoformat()
    return (
        f"# The tests' time by room\n\nWritten by `python -m tools.suite_times` on {today}: {processors()}, Python "
        f"{sys.version.split()[0]}; load average {load:.2f} when it started. Each room run alone by pytest (the "
        "default run: not `slow`); CPU is pytest's and every process it started.\n\n" + table(rows) + "\n"
    )


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m tools.suite_times", description=__doc__.split("\n\n")[0])
    parser.add_argument("rooms", nargs="*", default=list(ROOMS), help="folders of tests, each run alone")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks/tests.md")
    args, extra = parser.parse_known_args(argv)
    load = os.getloadavg()[0]
    text = report([time_room(room, extra) for room in args.rooms], load)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    write_with(args.output, lambda tmp: tmp.write_text(text))
    print(text)
    return text


if __name__ == "__main__":
    main()
