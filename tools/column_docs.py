"""The column dictionary, ``docs/columns.md``: every column of every table the workflow writes, with what it means,
from the code that defines them: the registries of descriptions beside the code that makes each column, put
together per table by ``onenn.jobs.columns`` (the same descriptions the tables carry in their Parquet schema).

    python -m tools.column_docs           # rewrite docs/columns.md
    python -m tools.column_docs --check   # exit 1 if docs/columns.md is not what it would write now

``tests/repo/test_column_docs.py`` holds the page equal to what this writes, and ``tests/unit/test_columns.py``
holds every table the jobs write to have exactly the columns described, each with its description.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from onenn.base import paths
from onenn.jobs.columns import descriptions

ROOT = Path(__file__).resolve().parents[1]
PAGE = "docs/columns.md"
COMMAND = "python -m tools.column_docs"

#: the tables: (their name in onenn.jobs.columns, title, where they are)
TABLES = (
    (
        "train",
        "A training run's table (`train`)",
        (
            f"`{paths.RUN_METRICS}`, one row per saved step and test set; a `train` experiment's "
            f"`{paths.TABLE}` is its runs' tables one after the other"
        ),
    ),
    (
        "binary",
        "A binary run's table (`binary`)",
        (
            f"`{paths.RUN_METRICS}` of a `binary` experiment, one row per saved step and prompt set; the "
            f"experiment's `{paths.TABLE}` is its runs' tables one after the other"
        ),
    ),
    (
        "scaling",
        "The scaling identity's table (`scaling`)",
        f"`{paths.TABLE}` of a `scaling` experiment, one row per panel, point `(ξ1, ξ2)` and `K`",
    ),
    (
        "audit",
        "The audit's table (`audit`)",
        (
            f"`{paths.VARIANT_TABLE}` of an `audit` experiment, one row per trajectory and recorded time; the "
            f"experiment's `{paths.TABLE}` is its variants' tables one after the other"
        ),
    ),
    (
        "landscape",
        "The landscape's table (`landscape`)",
        f"`{paths.TABLE}` of a `landscape` experiment, one row per grid point",
    ),
    (
        "full_matrix",
        "Full-matrix GD against reduced GD (`full_matrix`)",
        (
            f"`{paths.VARIANT_TABLE}` of a `full_matrix` experiment, one row per recorded step; the "
            f"experiment's `{paths.TABLE}` is its variants' tables one after the other"
        ),
    ),
    ("summary", "The headline table", f"`{paths.SUMMARY_TABLE}`, one row per experiment, variant and quantity"),
    ("claims", "The scorecard", f"`{paths.CLAIMS_TABLE}`, one row per claim ([claims.md](claims.md))"),
)


def page() -> str:
    lines = [
        "# The tables' columns",
        "",
        f"Written by `{COMMAND}` from the code that defines the columns: rerun it rather than edit this page.",
        "Read a table with `pandas.read_parquet`; the names are those of the glossary of",
        "[method.md §8](method.md#8-glossary). Each table carries the same descriptions in its Parquet schema, as",
        'its fields\' metadata: `pyarrow.parquet.read_schema(path).field(column).metadata[b"description"]`.',
        "",
    ]
    for table, title, where in TABLES:
        lines += [f"## {title}", "", f"{where}.", "", "| column | meaning |", "|---|---|"]
        lines += [f"| `{column}` | {meaning} |" for column, meaning in descriptions(table).items()]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help=f"exit 1 if {PAGE} is stale; write nothing")
    args = parser.parse_args(argv)
    path = root / PAGE
    new = page()
    old = path.read_text(encoding="utf-8") if path.exists() else None
    if args.check:
        if new != old:
            print(f"{PAGE} is not what the code defines: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if new != old:
        path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
