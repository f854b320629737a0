"""tools.compare: two runs' tables (equal, within round-off, every kind of difference) and scorecards side by side
(points read from the details, the change in units of the two spreads, by hand)."""

import math

import numpy as np
import pandas as pd
import pytest

from tools.compare import compare, main, points, side_by_side


def write(root, name, frame):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path)


def test_equal_renamed_different_and_missing_tables(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    frame = pd.DataFrame({"step": [0, 1], "acc": [0.5, 1.0], "code": ["a", "a"]})
    write(old, "tables/a.parquet", frame)
    write(new, "tables/a.parquet", frame)
    write(old, "tables/b.parquet", frame)
    write(new, "tables/b.parquet", frame.rename(columns={"acc": "accuracy"}))
    write(old, "tables/c.parquet", frame)
    write(new, "tables/c.parquet", frame.assign(acc=[0.5, 0.9]))
    write(old, "tables/d.parquet", frame)
    write(new, "tables/e.parquet", frame.astype({"step": "float64"}))
    write(old, "tables/f.parquet", frame)
    write(new, "tables/f.parquet", frame.astype({"step": "float64"}))  # same values, another type
    write(old, "tables/g.parquet", frame)
    write(new, "tables/g.parquet", frame.assign(code=["b", "b"]))  # another code fingerprint
    verdicts = dict(compare(old, new, {}))
    assert verdicts["tables/a.parquet"] == "equal"
    assert verdicts["tables/b.parquet"].startswith("DIFFERENT") and "accuracy" in verdicts["tables/b.parquet"]
    # |0.9 - 1| / 1 = 0.1, the largest relative change
    assert verdicts["tables/c.parquet"] == "DIFFERENT: acc (largest relative change 0.1, in acc)"
    assert verdicts["tables/d.parquet"] == "only in old" and verdicts["tables/e.parquet"] == "only in new"
    assert verdicts["tables/f.parquet"] == "DIFFERENT: step"
    assert verdicts["tables/g.parquet"] == "DIFFERENT: code"
    assert dict(compare(old, new, {"acc": "accuracy"}))["tables/b.parquet"] == "equal"
    assert dict(compare(old, new, {}, ignore=["step"]))["tables/f.parquet"] == "equal"
    assert dict(compare(old, new, {}, ignore=["code"]))["tables/g.parquet"] == "equal"


def test_a_table_equal_but_for_round_off_is_close_and_names_its_largest_change(tmp_path, capsys):
    old, new = tmp_path / "old", tmp_path / "new"
    frame = pd.DataFrame({"loss": [1.0, 0.0, np.nan, 4.0], "step": [1, 2, 3, 4]})
    write(old, "tables/t.parquet", frame)
    write(new, "tables/t.parquet", frame.assign(loss=[np.nextafter(1.0, 2.0), 0.0, np.nan, 4.0]))
    eps = 2.0**-52 / (1 + 2.0**-52)  # one unit in the last place of 1.0, relative to the larger value
    assert (
        dict(compare(old, new, {}))["tables/t.parquet"]
        == f"DIFFERENT: loss (largest relative change {eps:.3g}, in loss)"
    )
    assert (
        dict(compare(old, new, {}, rtol=1e-15))["tables/t.parquet"]
        == f"close: loss (largest relative change {eps:.3g}, in loss)"
    )
    assert main(["tables", str(old), str(new), "--rtol", "1e-15"]) == 0
    assert main(["tables", str(old), str(new)]) == 1
    assert "0 of 1 tables equal or within --rtol 0" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # no tables: the wrong folders, not a match
        main(["tables", str(tmp_path / "none"), str(tmp_path / "none")])
    write(new, "tables/t.parquet", frame.assign(loss=[1.0, 0.0, 1.0, 4.0]))  # NaN against a number: not round-off
    assert dict(compare(old, new, {}, rtol=1.0))["tables/t.parquet"].startswith(
        "DIFFERENT: loss (largest relative change inf"
    )


def test_the_points_of_a_detail_are_read_with_their_spreads():
    detail = "K=3: 0.9268 ± 0.00093 vs 1 (z = -17.52); K=5: 0.752 → 0.01058, falling; c=1: +7.76 ± 0.00084 per decade"
    assert points(detail) == {
        "K=3": (0.9268, 0.00093),
        "K=5": (0.01058, pytest.approx(math.nan, nan_ok=True)),
        "c=1": (7.76, 0.00084),
    }
    assert points("not in this run: K=7") == {}


def claims(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["claim", "detail", "verdict"])


def test_the_change_is_counted_in_the_two_spreads_and_the_verdicts_are_kept():
    old = claims(
        [("a", "x=1: 0.90 ± 0.03 vs 1; x=2: 0.5 ± 0 vs 0.5", "agrees"), ("b", "K=2: 0.2 → 0.1, falling", "agrees")]
    )
    new = claims([("a", "x=1: 0.94 ± 0.04 vs 1; x=2: 0.5 ± 0 vs 0.5", "differs"), ("c", "s=3: 1 ± 0 vs 1", "agrees")])
    table = side_by_side(old, new).set_index(["claim", "point"])
    assert table.loc[("a", "x=1"), "change / spread"] == pytest.approx(0.04 / 0.05)  # √(0.03² + 0.04²) = 0.05
    assert table.loc[("a", "x=2"), "change / spread"] == 0.0
    assert tuple(table.loc[("a", "x=1"), ["verdict before", "verdict after"]]) == ("agrees", "differs")
    assert table.loc[("a", "x=1"), "before"] == "0.9 ± 0.03" and table.loc[("a", "x=1"), "after"] == "0.94 ± 0.04"
    # a claim of one run only: no change, its verdict on its side
    assert math.isnan(table.loc[("b", "K=2"), "change / spread"]) and table.loc[("b", "K=2"), "after"] == "–"
    assert table.loc[("c", "s=3"), "before"] == "–" and table.loc[("c", "s=3"), "verdict after"] == "agrees"


def test_claims_writes_the_table_and_names_a_folder_without_a_scorecard(tmp_path, capsys):
    for run, value in (("old", "0.90"), ("new", "0.94")):
        write(tmp_path, f"{run}/tables/claims.parquet", claims([("a", f"x=1: {value} ± 0.03 vs 1", "agrees")]))
    output = tmp_path / "side.md"
    assert main(["claims", str(tmp_path / "old"), str(tmp_path / "new"), "--output", str(output)]) == 0
    assert "| a | x=1 | 0.9 ± 0.03 | 0.94 ± 0.03 | +0.94 | agrees | agrees |" in output.read_text()  # 0.04 / 0.0424
    with pytest.raises(SystemExit):
        main(["claims", str(tmp_path / "old"), str(tmp_path / "none")])
    assert "claims.parquet does not exist" in capsys.readouterr().err
