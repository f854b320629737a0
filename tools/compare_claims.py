"""The scorecard of two finished runs side by side: ``python -m tools.compare_claims OLD/results NEW/results``.

One Markdown row per claim of either run's ``tables/claims.parquet``: the quantity, each run's mean ± sd over its
``n`` seeds (for the scaling identity: the ratio ± its standard error), the change in units of its error and both verdicts. The error
of the change is ``√((sd_old² + sd_new²)/n + test_se_old² + test_se_new²)``: the two runs' seed-to-seed spreads of
a mean over ``n`` and their test sets' standard errors, all independent when the two runs draw different numbers
(as two versions of the random stream do). A change of a few units is what seed noise gives; the verdicts say
whether the scorecard reads the same. Prints the table (and writes it to ``--output``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from onenn.base.io import write_with

CLAIMS = Path("tables") / "claims.parquet"
#: the quantity of the rows whose ``ours_sd`` is already the standard error of ``ours_mean``
STANDARD_ERROR = "ratio ± se"


def change_in_errors(old: pd.Series, new: pd.Series) -> float:
    """(new − old) / its error (the module's docstring); NaN where a mean is missing, inf where the error is 0 and
    the means differ."""
    # the scaling identity's rows give the ratio's standard error itself as their spread
    n = 1.0 if new["quantity"] == STANDARD_ERROR else max(float(new["n"]), 1.0)
    error = math.sqrt((old["ours_sd"] ** 2 + new["ours_sd"] ** 2) / n + old["test_se"] ** 2 + new["test_se"] ** 2)
    delta = new["ours_mean"] - old["ours_mean"]
    if math.isnan(delta) or math.isnan(error):
        return math.nan
    if error == 0:
        return 0.0 if delta == 0 else math.copysign(math.inf, delta)
    return delta / error


def side_by_side(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """One row per claim of either table: the means, sds, the change in errors and the two verdicts."""
    merged = old.merge(new, on="claim", how="outer", suffixes=("_old", "_new")).set_index("claim")
    rows = []
    for claim, r in merged.iterrows():
        pick = {
            suffix: r.filter(like=f"_{suffix}").rename(lambda c, s=suffix: c.removesuffix(f"_{s}"))
            for suffix in ("old", "new")
        }
        rows.append(
            {
                "claim": claim,
                "quantity": r["quantity_new"] if isinstance(r["quantity_new"], str) else r["quantity_old"],
                "before": number(pick["old"]),
                "after": number(pick["new"]),
                "change / error": change_in_errors(pick["old"], pick["new"]),
                "verdict before": r["verdict_old"],
                "verdict after": r["verdict_new"],
            }
        )
    return pd.DataFrame(rows)


def number(r: pd.Series) -> str:
    """``mean ± sd`` with 4 significant digits, or – where the claim has no single number."""
    if pd.isna(r.get("ours_mean")):
        return "–"
    return f"{r['ours_mean']:.4g} ± {r['ours_sd']:.2g}"


def markdown(table: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    for _, r in table.iterrows():
        cells = [f"{v:+.2f}" if isinstance(v, float) else str(v) for v in r]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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
