"""The workflow's linters, run by the suite as by CI: ``snakemake --lint`` gives no advice but the conda/container
one (the project's environment is the lock, installed by workflow/install.sh, not one per rule), and snakefmt
changes nothing."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.configs import ROOT


def test_snakemake_lint_gives_only_the_environment_advice():
    lint = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    text = lint.stdout + lint.stderr
    assert "Lints for rule" in text, f"snakemake --lint did not run:\n{text}"
    advice = set(re.findall(r"^\s+\* (.+)$", text, re.MULTILINE))
    assert advice == {"Specify a conda environment or container for each rule.:"}, text


def test_snakefmt_leaves_the_snakefile_and_the_rules_unchanged():
    done = subprocess.run(
        [sys.executable, "-m", "snakefmt", "--check", "Snakefile", "workflow/rules"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
