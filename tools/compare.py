"""Two finished runs compared: ``python -m tools.compare tables OLD/results NEW/results`` (every Parquet table)
and ``python -m tools.compare claims OLD/results NEW/results`` (the scorecards side by side)."""

import argparse
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from onenn.analysis.markdown import markdown_table, number
from onenn.base.io import write_with

CLAIMS = Path("tables") / "claims.parquet"
NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
SPREAD = re.compile(rf"^(?P<value>{NUMBER}) ± (?P<spread>{NUMBER})")  # label: mean ± spread ...
TREND = re.compile(rf"^{NUMBER} → (?P<value>{NUMBER})")  # label: first → last, ...


def relative_change(old: pd.Series, new: pd.Series) -> float:
    """max |new − old| / max(|old|, |new|) over a numeric column (0 where both are equal or NaN; inf for NaN
    against a number); NaN for a column that is not numeric."""
    types = pd.api.types
    if not (types.is_numeric_dtype(old) and types.is_numeric_dtype(new)) or types.is_bool_dtype(old):
        return math.nan
    a, b = old.to_numpy(np.float64, na_value=np.nan), new.to_numpy(np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        change = np.abs(b - a) / np.maximum(np.abs(a), np.abs(b))
    change[(a == b) | (np.isnan(a) & np.isnan(b))] = 0.0
    return float(np.nan_to_num(change, nan=np.inf).max(initial=0.0))


def verdict(old: pd.DataFrame, new: pd.DataFrame, rtol: float) -> str:
    """``equal``; ``close`` (every difference a numeric one of at most ``rtol``, the types the same); or
    ``DIFFERENT``, with the first columns that differ; either of the last two with the largest relative change."""
    if old.equals(new):
        return "equal"
    if len(old) != len(new):
        return f"DIFFERENT: (rows: {len(old)} vs {len(new)})"
    names = list(dict.fromkeys([*new.columns, *old.columns]))
    differ = [c for c in names if c not in old or c not in new or not old[c].equals(new[c])]
    shared = [c for c in differ if c in old and c in new and old[c].dtype == new[c].dtype]
    changes = {c: relative_change(old[c].reset_index(drop=True), new[c].reset_index(drop=True)) for c in shared}
    changes = {c: change for c, change in changes.items() if not math.isnan(change)}
    largest = max(changes, key=changes.get, default=None)
    named = "" if largest is None else f" (largest relative change {changes[largest]:.3g}, in {largest})"
    columns = ", ".join(map(str, differ[:8])) or "(the columns' order or the index)"
    if largest is not None and len(changes) == len(differ) and changes[largest] <= rtol and old.index.equals(new.index):
        return f"close: {columns}{named}"
    return f"DIFFERENT: {columns}{named}"


def compare(
    old_root: Path, new_root: Path, rename: dict[str, str], ignore: Sequence[str] = (), rtol: float = 0.0
) -> list[tuple[str, str]]:
    """(table, verdict) for every Parquet table of either run, by its path under the run's folder."""
    old, new = ({str(p.relative_to(root)): p for p in sorted(root.rglob("*.parquet"))} for root in (old_root, new_root))
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in new or name not in old:
            out.append((name, f"only in {'old' if name in old else 'new'}"))
            continue
        a = pd.read_parquet(old[name]).rename(columns=rename).drop(columns=list(ignore), errors="ignore")
        b = pd.read_parquet(new[name]).drop(columns=list(ignore), errors="ignore")
        out.append((name, verdict(a, b, rtol)))
    return out


def points(detail: str) -> dict[str, tuple[float, float]]:
    """The points of a claim's ``detail``: label → (value, spread), the spread NaN where none is printed."""
    out = {}
    for part in str(detail).split("; "):
        label, _, text = part.partition(": ")
        if not text or label.startswith("not in this run"):
            continue
        if match := SPREAD.match(text):
            out[label] = (float(match["value"]), float(match["spread"]))
        elif match := TREND.match(text):
            out[label] = (float(match["value"]), math.nan)
    return out


def change_in_spreads(old: tuple[float, float], new: tuple[float, float]) -> float:
    """(new − old) / √(spread_old² + spread_new²); NaN without both spreads; ±inf for spreads 0 and values apart."""
    (a, sa), (b, sb) = old, new
    spread = math.hypot(sa, sb)
    if math.isnan(spread):
        return math.nan
    if spread == 0:
        return 0.0 if a == b else math.copysign(math.inf, b - a)
    return (b - a) / spread


def show(point: tuple[float, float] | None) -> str:
    if point is None:
        return "–"
    return number(point[0]) + ("" if math.isnan(point[1]) else f" ± {number(point[1], 2)}")


def side_by_side(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """One row per (claim, point) of either scorecard: each run's value, the change in spreads, the verdicts."""
    rows = []
    for _, r in old.merge(new, on="claim", how="outer", suffixes=("_old", "_new")).iterrows():
        before, after = points(r["detail_old"]), points(r["detail_new"])
        for label in dict.fromkeys([*before, *after]):
            b, a = before.get(label), after.get(label)
            change = change_in_spreads(b, a) if a and b else math.nan
            rows.append([r["claim"], label, show(b), show(a), change, r["verdict_old"], r["verdict_new"]])
    columns = ["claim", "point", "before", "after", "change / spread", "verdict before", "verdict after"]
    return pd.DataFrame(rows, columns=columns)


def markdown(table: pd.DataFrame) -> str:
    """The table as Markdown, the changes signed to two decimals."""

    def cell(value: object) -> str:
        return ("–" if math.isnan(value) else f"{value:+.2f}") if isinstance(value, float) else str(value)

    return markdown_table(list(table.columns), [[cell(v) for v in row] for row in table.itertuples(index=False)]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.compare", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    t = sub.add_parser("tables", help="every Parquet table: equal, close (--rtol) or DIFFERENT; exit 1 if any is not")
    c = sub.add_parser("claims", help="one Markdown row per point of every claim: values, change in spreads, verdicts")
    for p in (t, c):
        p.add_argument("old", type=Path, help="the first run's results/ folder")
        p.add_argument("new", type=Path, help="the second run's results/ folder")
    t.add_argument("--rename", action="append", default=[], help="old=new: a column renamed between the runs")
    t.add_argument("--ignore", action="append", default=[], help="a column left out of both (e.g. code, code_from)")
    t.add_argument("--rtol", type=float, default=0.0, help="largest relative change called close (default: 0)")
    c.add_argument("--output", type=Path, help="where the table is written (default: printed only)")
    args = parser.parse_args(argv)
    if args.what == "claims":
        paths = [folder / CLAIMS for folder in (args.old, args.new)]
        for path in paths:
            if not path.is_file():
                parser.error(f"{path} does not exist: is {path.parents[1]} a finished run's results/ folder?")
        text = markdown(side_by_side(*(pd.read_parquet(p) for p in paths)))
        print(text, end="")
        if args.output:
            write_with(args.output, lambda tmp: tmp.write_text(text))
        return 0
    verdicts = compare(args.old, args.new, dict(pair.split("=", 1) for pair in args.rename), args.ignore, args.rtol)
    if not verdicts:
        parser.error(f"no Parquet tables under {args.old} or {args.new}: are they finished runs' results/ folders?")
    for name, v in verdicts:
        print(f"{v.split(':')[0]:10s} {name}{v[v.find(':') :] if ':' in v else ''}")
    same = sum(v.startswith(("equal", "close")) for _, v in verdicts)
    print(f"{same} of {len(verdicts)} tables equal or within --rtol {args.rtol:g}")
    return 0 if same == len(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
