"""The stream's benchmark runs end to end and writes its table (no timings are asserted)."""

from tools.bench_stream import main


def test_bench_stream_writes_its_table(tmp_path):
    out = tmp_path / "stream.md"
    text = main(["--steps", "2", "--reps", "1", "--configs", "defaults", "N=32", "--output", str(out)])
    assert out.read_text() == text
    rows = [line for line in text.splitlines() if line.startswith(("| defaults", "| N=32"))]
    assert len(rows) == 2
    assert [row.split("|")[2].strip() for row in rows] == ["17408", "33792"]  # d·(N+1)·B Gaussians a step
    assert all(len(row.strip("|").split("|")) == 8 for row in rows)
