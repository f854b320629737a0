"""The tests that run Snakemake: on the quick preset end to end, its dry-run plans, the profiles, failures and
interruptions, each in a temporary copy of the workflow. They are marked ``workflow`` (tests/conftest.py):
`python -m pytest -m "not workflow and not slow"` runs every other room; the default `python -m pytest` runs all."""

from pathlib import Path

import pytest

from tests.workflow.helpers import copy_workflow, snakemake


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory) -> Path:
    """A complete quick run, shared by the tests that inspect it or plan changes on it (none may modify it)."""
    workdir = copy_workflow(tmp_path_factory.mktemp("quick"))
    done = snakemake(workdir)
    assert done.returncode == 0, done.stderr[-5000:]
    return workdir
