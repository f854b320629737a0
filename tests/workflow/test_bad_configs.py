"""Snakemake rejects a bad config before any job, with the validator's message naming the key path, and writes
nothing (the validator itself: tests/unit/test_validate.py)."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.bad_configs import BAD_CONFIGS, bad_config
from tests.workflow.helpers import copy_workflow

#: the default run's cases: one of the validator's messages (test_validate.py holds them all, the slow test below
#: runs them all through Snakemake), and the ones that turn on the file as Snakemake reads it
THROUGH_SNAKEMAKE = ["K_below_2", "lr_nan", "alias_bomb", "palette_unknown", "experiment_name_newline"]


def run_with_config(workdir: Path, config: dict) -> subprocess.CompletedProcess:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1"]
    return subprocess.run(cmd, check=False, cwd=workdir, capture_output=True, text=True, timeout=300)


def check_rejected(workdir: Path, case) -> None:
    name, edit, path, message = case
    done = run_with_config(workdir, bad_config(edit))
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "ConfigError" in output and f"\n  {path}: " in output and message in output, output
    for folder in ("results", "logs", "benchmarks"):
        assert not (workdir / folder).exists(), f"{name}: {folder}/ was created"


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("validate"))


@pytest.mark.parametrize("name", THROUGH_SNAKEMAKE)
def test_snakemake_rejects_a_bad_config_before_any_job(workflow_copy, name):
    check_rejected(workflow_copy, next(b for b in BAD_CONFIGS if b[0] == name))


@pytest.mark.slow
@pytest.mark.parametrize("case", BAD_CONFIGS, ids=[b[0] for b in BAD_CONFIGS])
def test_snakemake_rejects_every_bad_config(workflow_copy, case):
    check_rejected(workflow_copy, case)
