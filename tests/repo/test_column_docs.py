"""docs/columns.md, the column dictionary, is what ``python -m tools.docs columns`` writes from the code now, and it
has a section for every table the workflow writes, where every column is described or named. (That the tables have
exactly the columns described, each with its description in the Parquet schema, is tests/unit/test_columns.py's.)"""

from __future__ import annotations

import re

from onenn.base.columns import setting_description
from onenn.jobs import columns
from tests.configs import ROOT
from tools import docs


def test_the_page_is_what_the_tool_writes_now():
    assert (ROOT / docs.PAGE).read_text(encoding="utf-8") == docs.page(), (
        "docs/columns.md is not what the code defines: run `python -m tools.docs columns` and commit it"
    )


def sections(page: str) -> dict[str, str]:
    """The table's name (in back quotes at the end of its heading, or the scorecard's and headline's) -> its text."""
    found = {}
    for section in re.split(r"^## ", page, flags=re.MULTILINE)[1:]:
        heading = section.splitlines()[0]
        name = re.search(r"\(`(\w+)`\)$", heading)
        found[name[1] if name else {"The headline table": "summary", "The scorecard": "claims"}[heading]] = section
    return found


def test_every_column_of_every_table_is_described_in_its_section_or_an_earlier_one():
    page = docs.page()
    by_table = sections(page)
    assert sorted(by_table) == sorted(columns.TABLES)
    head = page.split("\n## ", 1)[0]
    for name in columns.TABLES:
        section = by_table[name]
        for column, meaning in columns.descriptions(name).items():
            if meaning == setting_description(column):
                assert re.search(rf"^Its settings: .*`{column}`[,.]", section, re.MULTILINE), (name, column)
            elif meaning == docs.VERSION.format(column):
                own = re.search(r"^Its packages' versions: (.*)$", section, re.MULTILINE)
                assert f"`{column}`" in (own[1] if own else head.split("each package (", 1)[1]), (name, column)
            elif f"- `{column}`: {meaning}\n" not in section:
                earlier = re.findall(rf"^As in `(\w+)`: .*`{column}`[,.]", section, re.MULTILINE)
                assert earlier and f"- `{column}`: {meaning}\n" in by_table[earlier[0]], (name, column)


def test_check_says_which_command_to_run(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / docs.PAGE).write_text("stale")
    assert docs.main(["columns", "--check"], root=tmp_path) == 1
    assert "run `python -m tools.docs columns`" in capsys.readouterr().err
    assert docs.main(["columns"], root=tmp_path) == 0 and docs.main(["columns", "--check"], root=tmp_path) == 0
