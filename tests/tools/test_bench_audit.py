"""The audit's benchmark (python -m tools.bench audit) runs end to end and writes its table (no timings are asserted)."""

from tools.bench import main


def test_bench_audit_writes_its_table(tmp_path):
    out = tmp_path / "audit.md"
    text = main(["audit", "--quick", "--reps", "1", "--output", str(out)])
    assert out.read_text() == text
    rows = [line for line in text.splitlines() if line.startswith(("| sample", "| population"))]
    assert len(rows) == 4
    assert "(1280 prompts x N=32)" in rows[0]  # 1024 plain and 16 x 16 stratified prompts
    assert "(4096 nodes)" in rows[1]  # 32 x 16 x 8 nodes (third_nodes: the settings' default)
    assert all(float(row.split("|")[3]) > 0 for row in rows)
