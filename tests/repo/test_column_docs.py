"""docs/columns.md, the column dictionary, is what ``python -m tools.column_docs`` writes from the code now, and it
lists every table the workflow writes. (That the tables have exactly the columns described, each with its
description in the Parquet schema, is tests/unit/test_columns.py's.)"""

from __future__ import annotations

from onenn.jobs import columns
from tests.configs import ROOT
from tools import column_docs


def test_the_page_is_what_the_tool_writes_now():
    assert (ROOT / column_docs.PAGE).read_text(encoding="utf-8") == column_docs.page(), (
        "docs/columns.md is not what the code defines: run `python -m tools.column_docs` and commit it"
    )


def test_the_page_lists_every_table_with_every_column_described():
    assert sorted(name for name, _, _ in column_docs.TABLES) == sorted(columns.TABLES)
    page = column_docs.page()
    for name in columns.TABLES:
        for column, description in columns.descriptions(name).items():
            assert f"| `{column}` | {description} |" in page, (name, column)


def test_check_says_which_command_to_run(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / column_docs.PAGE).write_text("stale")
    assert column_docs.main(["--check"], root=tmp_path) == 1
    assert "run `python -m tools.column_docs`" in capsys.readouterr().err
    assert column_docs.main([], root=tmp_path) == 0 and column_docs.main(["--check"], root=tmp_path) == 0
