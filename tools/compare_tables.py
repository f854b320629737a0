"""Compare the Parquet tables of two finished runs, table by table, with ``DataFrame.equals``.

    python -m tools.compare_tables OLD/results NEW/results [--rename old=new ...] [--ignore column ...]

Prints one line per table of either run (``equal``, ``DIFFERENT`` with the first columns that differ, or
``only in OLD/NEW``) and exits 1 if any table differs. ``--rename`` maps a column of the old tables to its new
name before comparing (a column renamed between the two versions); ``--ignore`` leaves a column out of both
(e.g. a wall-clock time, which no two runs share).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd


def tables(results: Path) -> dict[str, Path]:
    """Every Parquet table under ``results``, by its path relative to it."""
    return {str(p.relative_to(results)): p for p in sorted(results.rglob("*.parquet"))}


def differing_columns(old: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    """The columns whose values or types differ (a column of one frame only counts), in the new frame's order."""
    names = list(dict.fromkeys([*new.columns, *old.columns]))
    if len(old) != len(new):
        return [f"(rows: {len(old)} vs {len(new)})"]
    return [c for c in names if c not in old or c not in new or not old[c].equals(new[c])]


def compare(
    old_root: Path, new_root: Path, rename: dict[str, str], ignore: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """(table, verdict) for every table of either run."""
    old, new = tables(old_root), tables(new_root)
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in new or name not in old:
            out.append((name, f"only in {'old' if name in old else 'new'}"))
            continue
        a = pd.read_parquet(old[name]).rename(columns=rename).drop(columns=list(ignore), errors="ignore")
        b = pd.read_parquet(new[name]).drop(columns=list(ignore), errors="ignore")
        if a.equals(b):
            out.append((name, "equal"))
        else:
            out.append((name, "DIFFERENT: " + ", ".join(differing_columns(a, b)[:8])))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rename", action="append", default=[], help="old=new: a renamed column")
    parser.add_argument("--ignore", action="append", default=[], help="a column left out of both runs' tables")
    args = parser.parse_args(argv)
    rename = dict(pair.split("=", 1) for pair in args.rename)
    verdicts = compare(args.old, args.new, rename, args.ignore)
    for name, verdict in verdicts:
        print(f"{verdict.split(':')[0]:10s} {name}{verdict[verdict.find(':') :] if ':' in verdict else ''}")
    equal = sum(v == "equal" for _, v in verdicts)
    print(f"{equal} of {len(verdicts)} tables equal")
    return 0 if equal == len(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
