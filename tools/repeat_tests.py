"""Run chosen tests many times and print how often each passed: the way to catch a test that fails by chance.

    python -m tools.repeat_tests --count 30 --busy 2 tests/workflow/test_damaged_files.py -k second_invocation
    python -m tools.repeat_tests --sessions 3                 # the default test run, three times

``--count k`` runs every chosen test k times in a row inside one pytest session (fixtures shared by a module or
the session, such as the quick run of the workflow tests, are made once); ``--sessions s`` starts s pytest
sessions one after the other, each from scratch; ``--busy n`` keeps n processes spinning on the CPU meanwhile,
as a loaded machine would. Every other argument goes to pytest as it is (test paths, ``-k``, ``-m``). It prints,
for every test, its passes out of its runs, failing tests first, and exits 1 if any run of any test failed.

Loaded as a pytest plugin (``-p tools.repeat_tests --repeat-count k``), this module is what repeats the tests.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the id a repetition adds to a test's name, with the dash that joins it to the ids of other parameters
REPETITION = re.compile(r"repeat\d+of\d+-|-repeat\d+of\d+|repeat\d+of\d+")

# --- the plugin ------------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--repeat-count", type=int, default=1, help="run every test this many times in a row")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    count = metafunc.config.getoption("repeat_count")
    if count > 1:
        metafunc.fixturenames.append("_repetition")
        metafunc.parametrize("_repetition", range(count), indirect=True, ids=lambda i: f"repeat{i + 1}of{count}")


@pytest.fixture
def _repetition(request: pytest.FixtureRequest) -> int:
    return request.param


# --- the command -----------------------------------------------------------------------------------------------


def case_name(case: ET.Element) -> str:
    """``tests/workflow/test_x.py::test_y[a]`` from a JUnit test case, without its repetition id."""
    name = REPETITION.sub("", case.get("name", "")).replace("[]", "")
    return f"{case.get('classname', '').replace('.', '/')}.py::{name}"


def outcomes(junit_xml: Path) -> Iterator[tuple[str, str]]:
    """(test, ``passed``/``failed``/``skipped``) for every test case of a JUnit XML report."""
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            yield case_name(case), "failed"
        elif case.find("skipped") is not None:
            yield case_name(case), "skipped"
        else:
            yield case_name(case), "passed"


@contextmanager
def busy_cores(n: int) -> Iterator[None]:
    """``n`` processes spinning on the CPU for as long as the block runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def table(counts: dict[str, Counter]) -> str:
    """One line a test, the tests with failures first: ``passed/runs  test`` (and the failures, skips)."""
    lines = []
    for name, c in sorted(counts.items(), key=lambda item: (-item[1]["failed"], item[0])):
        runs = c["passed"] + c["failed"]
        extra = "".join(f", {c[k]} {k}" for k in ("failed", "skipped") if c[k])
        lines.append(f"{c['passed']:>4}/{runs:<4} {name}{extra}")
    return "\n".join(lines)


def parse(argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="python -m tools.repeat_tests", description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1, help="runs of every test in one pytest session")
    parser.add_argument("--sessions", type=int, default=1, help="pytest sessions, one after the other")
    parser.add_argument("--busy", type=int, default=0, help="processes keeping the CPU busy meanwhile")
    args, pytest_args = parser.parse_known_args(argv)
    if args.count < 1 or args.sessions < 1 or args.busy < 0:
        parser.error("--count and --sessions must be at least 1, --busy at least 0")
    return args, pytest_args


def main(argv: Sequence[str] | None = None) -> int:
    args, pytest_args = parse(argv)
    counts: dict[str, Counter] = {}
    with tempfile.TemporaryDirectory(prefix="onenn-repeat-") as tmp, busy_cores(args.busy):
        for session in range(args.sessions):
            report = Path(tmp) / f"session{session}.xml"
            command = [sys.executable, "-m", "pytest", "-q", "-p", "tools.repeat_tests"]
            command += [f"--repeat-count={args.count}", f"--junitxml={report}", *pytest_args]
            done = subprocess.run(command, cwd=ROOT, check=False)
            if not report.exists():
                print(f"repeat_tests: session {session + 1} wrote no report (pytest exit {done.returncode})")
                return 1
            for name, outcome in outcomes(report):
                counts.setdefault(name, Counter())[outcome] += 1
    busy = f", {args.busy} busy processes" if args.busy else ""
    print(f"\n{args.sessions} session(s) x {args.count} run(s) of each test{busy}; passed/runs:")
    print(table(counts))
    return 1 if any(c["failed"] for c in counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
