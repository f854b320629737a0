"""Repeating a test to catch one that fails by chance is pytest-repeat's (in the lock): ``pytest --count k`` runs
every chosen test k times in one session."""

from __future__ import annotations

import subprocess
import sys

#: a test that fails on every second call within a session, beside one that always passes
TESTS = """
calls = []

def test_every_second_call_fails():
    calls.append(1)
    assert len(calls) % 2 == 1

def test_always_passes():
    pass
"""


def test_count_runs_every_test_k_times_in_one_session(tmp_path):
    (tmp_path / "test_synthetic.py").write_text(TESTS)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--count", "3", "test_synthetic.py"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    # calls 1, 2, 3 of the first test: pass, fail, pass; the second passes three times
    assert done.returncode == 1 and "1 failed, 5 passed" in done.stdout, done.stdout
    assert "FAILED test_synthetic.py::test_every_second_call_fails[" in done.stdout  # the id names the repetition
