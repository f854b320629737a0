"""The side-by-side scorecard of two runs (tools.compare_claims): the change in units of its error, by hand."""

import math

import pandas as pd
import pytest

from tools.compare_claims import main, side_by_side


def claims(rows: list[tuple]) -> pd.DataFrame:
    columns = ["claim", "quantity", "ours_mean", "ours_sd", "test_se", "n", "verdict"]
    return pd.DataFrame(rows, columns=columns)


def test_the_change_is_counted_in_its_error_and_the_verdicts_are_kept():
    old = claims(
        [("a", "accuracy", 0.90, 0.03, 0.004, 9, "agrees"), ("b", "ratio ± se", 0.80, 0.002, 0.0, 8e4, "agrees")]
    )
    new = claims([("a", "accuracy", 0.92, 0.04, 0.003, 9, "differs"), ("c", "xi1", 1.0, 0.0, 0.0, 3, "agrees")])
    table = side_by_side(old, new).set_index("claim")
    # a: error √((0.03² + 0.04²)/9 + 0.004² + 0.003²) = √(0.0025/9 + 0.000025) = √0.000302778
    assert table.loc["a", "change / error"] == pytest.approx(0.02 / math.sqrt(0.0025 / 9 + 0.000025))
    assert (table.loc["a", "verdict before"], table.loc["a", "verdict after"]) == ("agrees", "differs")
    assert table.loc["a", "before"] == "0.9 ± 0.03" and table.loc["a", "after"] == "0.92 ± 0.04"
    # a claim of one run only: no change, its verdict on its side
    assert math.isnan(table.loc["b", "change / error"]) and pd.isna(table.loc["b", "verdict after"])
    assert table.loc["c", "before"] == "–" and table.loc["c", "verdict after"] == "agrees"


def test_a_folder_without_a_scorecard_is_named(tmp_path):
    with pytest.raises(SystemExit):
        main([str(tmp_path / "old"), str(tmp_path / "new")])
