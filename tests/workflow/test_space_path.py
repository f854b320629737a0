"""A venv in a folder whose path has a space: Snakemake writes the interpreter's path into a job's command unquoted
(snakemake/snakemake#2645), so every job exited 127 until the Snakefile quoted it (docs/reliability.md)."""

import subprocess
import sys
from pathlib import Path

import pytest

from onenn.base import paths
from tests.configs import QUICK
from tests.workflow.helpers import copy_workflow


def test_a_job_runs_from_a_venv_whose_path_has_a_space(tmp_path):
    if not Path(sys.executable).is_relative_to(sys.prefix):
        pytest.skip("this interpreter is not inside its prefix")
    folder = tmp_path / "my repo"
    folder.mkdir()
    # the running venv (or installation) seen through a folder with a space: Python finds its packages there
    (folder / "venv").symlink_to(sys.prefix, target_is_directory=True)
    python = folder / "venv" / Path(sys.executable).relative_to(sys.prefix)
    workdir = copy_workflow(folder)
    target = paths.UNIFORM_SET.format(d=2, N=4, K=2, size=8)
    command = [str(python), "-m", "snakemake", target, "--cores", "1", "--configfile", *QUICK]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (workdir / target).is_file()
