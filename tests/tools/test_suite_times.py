"""tools.suite_times: each room of tests run alone, its tests counted and its time written (no timings asserted)."""

from __future__ import annotations

from tools import suite_times

TESTS = """
import pytest

def test_a():
    pass

def test_b():
    pass

def test_c():
    pytest.skip("on purpose")
"""


def test_a_room_is_run_counted_and_written(tmp_path):
    room = tmp_path / "room"
    room.mkdir()
    (room / "test_x.py").write_text(TESTS)
    output = tmp_path / "tests.md"
    text = suite_times.main([str(room), "--output", str(output)])
    assert output.read_text() == text
    rows = [line.strip("| ").split(" | ") for line in text.splitlines() if line.startswith("| ")]
    assert rows[0] == ["room", "passed", "failed", "skipped", "wall s", "CPU s"]
    (mine,) = (row for row in rows if row[0] == f"`{room}`")
    assert mine[1:4] == ["2", "0", "1"]
    assert rows[-1][:4] == ["all", "2", "0", "1"]
    assert float(mine[4]) >= 0 and float(mine[5]) >= 0
