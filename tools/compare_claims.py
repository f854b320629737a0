"""The scorecard of two finished runs side by side: ``python -m tools.compare_claims OLD/results NEW/results``.

One Markdown row per point of every claim of either run's ``tables/claims.parquet`` (a claim's points are the
variants or grid points it is tested on, read from its ``detail``): the value each run gives it, as the scorecard
prints it (``mean ± spread``: over seeds the sample sd, for the scaling identity the ratio's standard error, for a
slope its standard error; ``first → last`` for a trend), the change in units of ``√(spread_old² + spread_new²)``
where both have a spread, and the claim's two verdicts. The unit is a spread, not the standard error of a mean
over seeds: a change of a few units or less is what two independent draws give. Prints the table (and writes it
to ``--output``).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from onenn.analysis.markdown import markdown_table
from onenn.base.io import write_with

CLAIMS = Path("tables") / "claims.parquet"
NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
#: ``label: mean ± spread ...`` or ``label: first → last, ...``
SPREAD = re.compile(rf"^(?P<value>{NUMBER}) ± (?P<spread>{NUMBER})")
TREND = re.compile(rf"^{NUMBER} → (?P<value>{NUMBER})")


def points(detail: str) -> dict[str, tuple[float, float]]:
    """The points of a claim's ``detail``: label → (value, spread), the spread NaN where none is printed."""
    out = {}
    for part in str(detail).split("; "):
        label, _, text = part.partition(": ")
        if not text or label.startswith("not in this run"):
            continue
        match = SPREAD.match(text)
        if match:
            out[label] = (float(match["value"]), float(match["spread"]))
            continue
        match = TREND.match(text)
        if match:
            out[label] = (float(match["value"]), math.nan)
    return out


def change_in_spreads(old: tuple[float, float], new: tuple[float, float]) -> float:
    """(new − old) / √(spread_old² + spread_new²); NaN without both spreads; ±inf where they are 0 and the values
    differ."""
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
    value, spread = point
    return f"{value:.4g}" if math.isnan(spread) else f"{value:.4g} ± {spread:.2g}"


def side_by_side(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """One row per (claim, point) of either table."""
    merged = old.merge(new, on="claim", how="outer", suffixes=("_old", "_new"))
    rows = []
    for _, r in merged.iterrows():
        before, after = points(r["detail_old"]), points(r["detail_new"])
        for label in dict.fromkeys([*before, *after]):
            b, a = before.get(label), after.get(label)
            rows.append(
                {
                    "claim": r["claim"],
                    "point": label,
                    "before": show(b),
                    "after": show(a),
                    "change / spread": change_in_spreads(b, a) if a and b else math.nan,
                    "verdict before": r["verdict_old"],
                    "verdict after": r["verdict_new"],
                }
            )
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame) -> str:
    """The table as Markdown (``onenn.analysis.markdown.markdown_table``), the changes signed to two decimals."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return "–" if math.isnan(value) else f"{value:+.2f}"
        return str(value)

    return markdown_table(list(table.columns), [[cell(v) for v in row] for row in table.itertuples(index=False)]) + "\n"


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m tools.compare_claims", description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="the first run's results/ folder")
    parser.add_argument("new", type=Path, help="the second run's results/ folder")
    parser.add_argument("--output", type=Path, help="where the table is written (default: printed only)")
    args = parser.parse_args(argv)
    tables = []
    for folder in (args.old, args.new):
        path = folder / CLAIMS
        if not path.is_file():
            parser.error(f"{path} does not exist: is {folder} a finished run's results/ folder?")
        tables.append(pd.read_parquet(path))
    text = markdown(side_by_side(*tables))
    print(text, end="")
    if args.output:
        write_with(args.output, lambda tmp: tmp.write_text(text))
    return text


if __name__ == "__main__":
    main()
