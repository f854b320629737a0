"""The scorecard stage through Snakemake: a bad claims file refused before any job, a config of one's own that
builds its own targets, and the scorecard of the quick run with its report page."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import yaml

from onenn.analysis.verdict import VERDICTS
from onenn.plan.claims_file import catalogue, load_claims, reference_configs
from tests.configs import ROOT
from tests.workflow.helpers import copy_workflow, snakemake

CLAIMS = ROOT / "workflow/claims.yaml"
SCHEMA = ROOT / "workflow/schemas/claims.schema.yaml"


def repository_config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def test_the_workflow_refuses_a_bad_claims_file_before_any_job(tmp_path):
    workdir = copy_workflow(tmp_path)
    path = workdir / "workflow/claims.yaml"
    path.write_text(path.read_text().replace("experiment: diagonal_init", "experiment: diagonal_int", 1))
    done = snakemake(workdir, "-n")
    assert done.returncode != 0
    assert "unknown experiment 'diagonal_int'; did you mean 'diagonal_init'?" in done.stdout + done.stderr
    assert not (workdir / "results").exists()


def test_a_config_without_the_papers_experiments_builds_its_own_targets(tmp_path):
    config = repository_config()
    workdir = copy_workflow(tmp_path)
    own = {**config, "experiments": {"mine": {"kind": "train", "figure": "convergence", "steps": 5, "seeds": 1}}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(own, sort_keys=False))
    table = subprocess_snakemake(workdir, "-n", "results/tables/mine.parquet")
    assert table.returncode == 0, table.stderr[-3000:]
    everything = subprocess_snakemake(workdir, "-n")
    assert everything.returncode != 0
    assert "claims[0].experiment: unknown experiment 'convergence'" in everything.stdout + everything.stderr


def subprocess_snakemake(workdir, *args: str) -> subprocess.CompletedProcess:
    """Snakemake on the workdir's own config.yaml (no preset)."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", *args]
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=600, check=False)


def test_quick_run_writes_the_scorecard_and_the_report_shows_it(quick_run, tmp_path):
    known = catalogue(*reference_configs(repository_config(), ROOT / "config.yaml"))
    card = pd.read_parquet(quick_run / "results/tables/claims.parquet")
    claims = load_claims(CLAIMS, known, SCHEMA)
    assert card["claim"].tolist() == [c.id for c in claims] and set(card["verdict"]) <= set(VERDICTS)
    trimmed = card.set_index("claim").loc["fig5_accuracy_epsilon_2"]  # the quick preset runs no epsilon = 2
    assert trimmed["verdict"] == "not run"
    assert "## Scorecard" in (quick_run / "results/tables/claims.md").read_text()
    report = tmp_path / "report.html"
    done = snakemake(quick_run, "--report", str(report))
    assert done.returncode == 0, done.stderr[-3000:]
    page = report.read_text()
    assert "results/tables/claims.html" in page and '"Claims"' in page
