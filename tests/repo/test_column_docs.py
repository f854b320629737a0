"""docs/columns.md, the column dictionary, is what ``python -m tools.column_docs`` writes from the code now, and
the columns it lists are those of the tables the code makes: a training run's table (made by onenn's Python API,
the workflow's own jobs), the headline table and the scorecard."""

from __future__ import annotations

import logging

import pandas as pd
import pytest

import onenn
from onenn.analysis.summary import scaling_summary, summarise, train_summary
from onenn.jobs.summary import summary_job
from tests.configs import ROOT
from tests.helpers import scaling_table, train_table
from tools import column_docs


def listed(title: str) -> list[str]:
    (columns,) = (columns for name, _, columns in column_docs.TABLES if name == title)
    return [column for column, _ in columns()]


def test_the_page_is_what_the_tool_writes_now():
    assert (ROOT / column_docs.PAGE).read_text(encoding="utf-8") == column_docs.page(), (
        "docs/columns.md is not what the code defines: run `python -m tools.column_docs` and commit it"
    )


def test_a_training_run_table_has_the_columns_listed():
    table = onenn.evaluate(onenn.train(steps=4, seeds=1, n_eval=2, test_size=64))
    assert sorted(table.columns) == sorted(listed("A training run's table"))
    assert list(table.columns[:5]) == listed("A training run's table")[:5]


def test_the_headline_table_has_the_columns_listed_in_order(tmp_path):
    for name, table in {"e": train_table(), "s": scaling_table()}.items():
        table.to_parquet(tmp_path / f"{name}.parquet")
    summary_job(
        {"e": str(tmp_path / "e.parquet"), "s": str(tmp_path / "s.parquet")},
        {"e": "train", "s": "scaling"},
        table_path=str(tmp_path / "summary.parquet"),
        markdown_path=str(tmp_path / "summary.md"),
        log=logging.getLogger("test"),
    )
    assert list(pd.read_parquet(tmp_path / "summary.parquet").columns) == listed("The headline table")
    summary = summarise({"e": train_table()}, {"e": train_summary, "s": scaling_summary})
    assert list(summary.columns) == listed("The headline table")[: len(summary.columns)]


def test_a_column_without_a_meaning_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(column_docs, "RUN_RECORD", (*column_docs.RUN_RECORD, "new_column"))
    with pytest.raises(KeyError, match="'new_column' has no meaning"):
        column_docs.page()


def test_check_says_which_command_to_run(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / column_docs.PAGE).write_text("stale")
    assert column_docs.main(["--check"], root=tmp_path) == 1
    assert "run `python -m tools.column_docs`" in capsys.readouterr().err
    assert column_docs.main([], root=tmp_path) == 0 and column_docs.main(["--check"], root=tmp_path) == 0
