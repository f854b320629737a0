"""The tests that run Snakemake: on the quick preset end to end, its dry-run plans, the profiles, failures and
interruptions, each in a temporary copy of the workflow. They are marked ``workflow`` (tests/conftest.py):
`python -m pytest -m "not workflow and not slow"` runs every other room; the default `python -m pytest` runs all."""

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.workflow.helpers import copy_workflow, snakemake_command


class QuickRun:
    """The quick run in a temporary copy of the workflow, started in the background (its output in files: a pipe
    that nobody reads would fill and stop it)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="onenn-quick-"))
        (self.root / "run").mkdir()
        self.workdir = copy_workflow(self.root / "run")
        self.log = self.root / "snakemake.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(snakemake_command(), cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT)

    def close(self) -> None:
        if self.process.poll() is None:  # the session ended before a test needed it (-x, a keyboard interrupt)
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


STARTED: list[QuickRun] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the quick run once the tests are collected, if one of them uses it: it then runs beside the tests that
    come before the workflow's (the unit tests keep about one core busy), and ``quick_run`` waits for it."""
    if any("quick_run" in getattr(item, "fixturenames", ()) for item in session.items):
        STARTED.append(QuickRun())


def pytest_sessionfinish() -> None:
    while STARTED:
        STARTED.pop().close()


@pytest.fixture(scope="session")
def quick_run() -> Path:
    """A complete quick run, shared by the tests that inspect it or plan changes on it (none may modify it)."""
    if not STARTED:
        STARTED.append(QuickRun())
    run = STARTED[0]
    returncode = run.process.wait(timeout=1800)
    assert returncode == 0, run.log.read_text()[-5000:]
    return run.workdir
