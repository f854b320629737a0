"""tools/compare_tables.py: equal tables are called equal, and every kind of difference is found."""

import pandas as pd

from tools.compare_tables import compare


def write(root, name, frame):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path)


def test_equal_renamed_different_and_missing_tables(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    frame = pd.DataFrame({"step": [0, 1], "acc": [0.5, 1.0]})
    write(old, "tables/a.parquet", frame)
    write(new, "tables/a.parquet", frame)
    write(old, "tables/b.parquet", frame)
    write(new, "tables/b.parquet", frame.rename(columns={"acc": "accuracy"}))
    write(old, "tables/c.parquet", frame)
    write(new, "tables/c.parquet", frame.assign(acc=[0.5, 0.9]))
    write(old, "tables/d.parquet", frame)
    write(new, "tables/e.parquet", frame.astype({"step": "float64"}))
    verdicts = dict(compare(old, new, {}))
    assert verdicts["tables/a.parquet"] == "equal"
    assert verdicts["tables/b.parquet"].startswith("DIFFERENT") and "accuracy" in verdicts["tables/b.parquet"]
    assert verdicts["tables/c.parquet"] == "DIFFERENT: acc"
    assert verdicts["tables/d.parquet"] == "only in old" and verdicts["tables/e.parquet"] == "only in new"
    assert dict(compare(old, new, {"acc": "accuracy"}))["tables/b.parquet"] == "equal"
    write(old, "tables/f.parquet", frame)
    write(new, "tables/f.parquet", frame.astype({"step": "float64"}))  # same values, another type
    assert dict(compare(old, new, {}))["tables/f.parquet"] == "DIFFERENT: step"
    assert dict(compare(old, new, {}, ignore=["step"]))["tables/f.parquet"] == "equal"
