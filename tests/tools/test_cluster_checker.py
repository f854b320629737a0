"""The cluster test's comparison (tests/slurm/check_cluster_run.py) without a cluster: a Slurm run's results
equal a checkout's, whose report and README figures the run does not make; one changed number is caught."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd

spec = importlib.util.spec_from_file_location(
    "check_cluster_run", Path(__file__).parents[1] / "slurm/check_cluster_run.py"
)
checker = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up
spec.loader.exec_module(checker)


def results(root: Path, value: float) -> Path:
    (root / "results/tables").mkdir(parents=True)
    (root / "results/runs").mkdir(parents=True)
    pd.DataFrame({"step": [0, 1], "loss": [0.5, value]}).to_parquet(root / "results/tables/t.parquet")
    np.savez(root / "results/runs/w.npz", W=np.eye(3))
    (root / "results/runs/run.json").write_text('{"seed": 0, "seconds": 1.5}')
    return root


def test_a_checkout_with_its_report_and_readme_figures_equals_the_run(tmp_path):
    run, checkout = results(tmp_path / "run", 0.25), results(tmp_path / "checkout", 0.25)
    (checkout / "results/readme").mkdir()
    (checkout / "results/readme/convergence.png").write_bytes(b"png")
    (checkout / "results/report.html").write_text("<html>")
    (run / "results/runs/run.json").write_text('{"seed": 0, "seconds": 9.0}')  # a timing: left out
    report = checker.Report()
    checker.compare_results(run, checkout, report)
    assert report.failures == [], report.lines


def test_a_changed_number_or_a_missing_file_fails(tmp_path):
    run, checkout = results(tmp_path / "run", 0.25), results(tmp_path / "checkout", 0.25 + 2**-40)
    (checkout / "results/tables/extra.parquet").write_bytes(b"")
    report = checker.Report()
    checker.compare_results(run, checkout, report)
    assert len(report.failures) == 2
    assert "extra.parquet" in report.failures[0] and "t.parquet" in report.failures[1]
