"""The engine benchmark (python -m tools.bench engine) runs end to end and writes its table (no timings are asserted)."""

from tools.bench import main


def test_bench_writes_its_table(tmp_path):
    out = tmp_path / "engine.md"
    text = main(
        ["engine", "--steps", "3", "--reps", "1", "--configs", "defaults", "K=10", "binary", "--output", str(out)]
    )
    assert out.read_text() == text
    main_table, profile = text.split("Where the engine's time goes")
    rows = [line for line in main_table.splitlines() if line.startswith(("| defaults", "| K=10", "| binary"))]
    assert len(rows) == 3 and all(len(line.strip("|").split("|")) == 9 for line in rows)
    assert [row.split("|")[4].strip() for row in rows] == ["3", "10", "1"]  # K (binary: the label width)
    parts = [line for line in profile.splitlines() if line.startswith(("| defaults", "| K=10", "| binary"))]
    assert len(parts) == 3 and all(len(line.strip("|").split("|")) == 5 for line in parts)
