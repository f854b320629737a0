"""The side-by-side scorecard of two runs (tools.compare_claims): points read from the details, the change in
units of the two spreads, by hand."""

import math

import pandas as pd
import pytest

from tools.compare_claims import main, points, side_by_side


def claims(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["claim", "detail", "verdict"])


def test_the_points_of_a_detail_are_read_with_their_spreads():
    detail = "K=3: 0.9268 ± 0.00093 vs 1 (z = -17.52); K=5: 0.752 → 0.01058, falling; c=1: +7.76 ± 0.00084 per decade"
    assert points(detail) == {
        "K=3": (0.9268, 0.00093),
        "K=5": (0.01058, pytest.approx(math.nan, nan_ok=True)),
        "c=1": (7.76, 0.00084),
    }
    assert points("not in this run: K=7") == {}


def test_the_change_is_counted_in_the_two_spreads_and_the_verdicts_are_kept():
    old = claims(
        [("a", "x=1: 0.90 ± 0.03 vs 1; x=2: 0.5 ± 0 vs 0.5", "agrees"), ("b", "K=2: 0.2 → 0.1, falling", "agrees")]
    )
    new = claims([("a", "x=1: 0.94 ± 0.04 vs 1; x=2: 0.5 ± 0 vs 0.5", "differs"), ("c", "s=3: 1 ± 0 vs 1", "agrees")])
    table = side_by_side(old, new).set_index(["claim", "point"])
    assert table.loc[("a", "x=1"), "change / spread"] == pytest.approx(0.04 / 0.05)  # √(0.03² + 0.04²) = 0.05
    assert table.loc[("a", "x=2"), "change / spread"] == 0.0
    assert (table.loc[("a", "x=1"), "verdict before"], table.loc[("a", "x=1"), "verdict after"]) == (
        "agrees",
        "differs",
    )
    assert table.loc[("a", "x=1"), "before"] == "0.9 ± 0.03" and table.loc[("a", "x=1"), "after"] == "0.94 ± 0.04"
    # a claim of one run only: no change, its verdict on its side
    assert math.isnan(table.loc[("b", "K=2"), "change / spread"]) and table.loc[("b", "K=2"), "after"] == "–"
    assert table.loc[("c", "s=3"), "before"] == "–" and table.loc[("c", "s=3"), "verdict after"] == "agrees"


def test_a_folder_without_a_scorecard_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(tmp_path / "old"), str(tmp_path / "new")])
    assert "claims.parquet does not exist" in capsys.readouterr().err
