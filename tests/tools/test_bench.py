"""The engine and the audit benchmarks (python -m tools.bench engine|audit) run end to end and write their tables (no
timings are asserted); tests/tools/test_bench_run.py tests python -m tools.bench run."""

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


def test_bench_audit_writes_its_table(tmp_path):
    out = tmp_path / "audit.md"
    text = main(["audit", "--quick", "--reps", "1", "--output", str(out)])
    assert out.read_text() == text
    rows = [line for line in text.splitlines() if line.startswith(("| sample", "| population"))]
    assert len(rows) == 4
    assert "(1280 prompts x N=32)" in rows[0]  # 1024 plain and 16 x 16 stratified prompts
    assert "(4096 nodes)" in rows[1]  # 32 x 16 x 8 nodes (third_nodes: the settings' default)
    assert all(float(row.split("|")[3]) > 0 for row in rows)
