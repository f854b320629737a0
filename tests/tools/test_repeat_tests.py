"""tools.repeat_tests: runs chosen tests many times, in one session and in several, and counts each test's passes."""

from __future__ import annotations

import textwrap

from tools import repeat_tests

#: a test that fails on every second call within a session, beside one that always passes (with two parameters)
TESTS = textwrap.dedent("""
    import pytest

    calls = []

    def test_every_second_call_fails():
        calls.append(1)
        assert len(calls) % 2 == 1

    @pytest.mark.parametrize("x", ["a", "b"])
    def test_always_passes(x):
        pass
""")


def test_counts_every_run_of_every_test_across_sessions(tmp_path, capsys):
    path = tmp_path / "test_synthetic.py"
    path.write_text(TESTS)
    status = repeat_tests.main(["--count", "3", "--sessions", "2", str(path), "-p", "no:cacheprovider"])
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[1].split("::")[-1].rstrip(","): line.split()[0] for line in lines if "::" in line}
    # per session: calls 1, 2, 3 -> pass, fail, pass; two sessions, each from scratch
    assert rows == {
        "test_every_second_call_fails": "4/6",
        "test_always_passes[a]": "6/6",
        "test_always_passes[b]": "6/6",
    }
    assert status == 1
    assert "2 failed" in next(line for line in lines if "every_second" in line)


def test_all_passing_runs_exit_zero(tmp_path, capsys):
    path = tmp_path / "test_synthetic.py"
    path.write_text(TESTS)
    status = repeat_tests.main(["--count", "2", "--busy", "1", str(path), "-k", "always", "-p", "no:cacheprovider"])
    assert status == 0
    assert "1 busy processes" in capsys.readouterr().out
