"""The column dictionary, ``docs/columns.md``: every column of the tables below, in order, from the code that
defines them (``onenn.base.columns``, ``onenn.family.diagnostics``, ``onenn.plan.kinds``, ``onenn.base.provenance``,
``onenn.analysis.summary.COLUMNS``, ``onenn.analysis.scorecard.COLUMNS``), each with its meaning.

    python -m tools.column_docs           # rewrite docs/columns.md
    python -m tools.column_docs --check   # exit 1 if docs/columns.md is not what it would write now

A column the code defines with no meaning in ``MEANINGS`` is an error, so a new column is documented when it is
added; ``tests/repo/test_column_docs.py`` holds the page equal to what this writes, and the columns listed equal to
those of tables the code makes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from onenn.base import provenance
from onenn.base.columns import ID_COLUMNS, METRICS, se_column
from onenn.family import diagnostics
from onenn.plan.kinds import KINDS

ROOT = Path(__file__).resolve().parents[1]
PAGE = "docs/columns.md"
COMMAND = "python -m tools.column_docs"
#: what a training run's record adds to its settings (onenn.jobs.train.train_job), in the table's order
RUN_RECORD = ("device_used", "diverged", "diverged_step")

#: what each column means (settings columns are described in docs/configuration.md and need no entry here)
MEANINGS = {
    # identity
    "experiment": "the experiment's name (a key of `experiments:` in the config)",
    "variant": "the variant's name: `default`, or the settings it overrides as `key=value` joined by `+`",
    "seed": "the run's seed",
    "step": "the SGD step of the saved weights `W` (0: the start)",
    "test_set": "the test set: `uniform` or `separated` (method.md §3)",
    # metrics
    "logit_error": "mean over the test prompts of `‖ℓ − u_{c_{i*}}‖²` (method.md §5.1)",
    "accuracy": "share of test prompts with `argmax ℓ = c_{i*}`: agreement with the 1-NN classifier",
    "test_loss": "the run's own loss (its `loss`) on the test set",
    "se": "standard error over the test prompts (sample sd / √n) of the column it follows",
    # parameters
    "xi1": "ξ1 of the Frobenius projection of `W` onto the family `diag{ξ1·I, 0, −ξ2}`",
    "xi2": "ξ2 of that projection",
    "dist_family": "Frobenius distance of `W` to the family, over the whole matrix",
    "dist_family_active": "the same over the blocks the loss depends on (all but the label columns)",
    "label_norm": "Frobenius norm of the label columns of `W`",
    "minibatch_loss": "mean minibatch loss of the SGD steps since the previous saved step (at step 0: the first)",
    # record
    "device_used": "the device the run trained on (`cpu`, `cuda:0`); `device` is the one asked for",
    "diverged": "whether the run diverged (kept with `on_divergence: record`)",
    "diverged_step": "the step it diverged at, −1 if it did not",
    "gpu": f"the GPU model the runs were trained on, `{provenance.NO_GPU}` on the CPU (`; `-joined in the headline)",
    "cuda": f"the CUDA version of torch's build on that GPU, `{provenance.NO_GPU}` on the CPU",
    "code": "fingerprint of the onenn code the job ran (onenn.base.fingerprint)",
    "code_from": "where that code came from: `git <commit>`, `(modified)` if the checkout differed, else the version",
    # headline table
    "kind": "the experiment's kind: " + ", ".join(f"`{k}`" for k in KINDS),
    "K": "number of classes `K`, where the row is of one",
    "panel": "the scaling identity's figure panel",
    "quantity": "what the row measures (e.g. `accuracy` at the last step, `dist_family_ratio`, `ratio`)",
    "mean": "its mean over seeds (or its estimate)",
    "sd": "its sample sd over seeds",
    "n": "seeds (or prompts) behind it",
    "lower": "lower end of its interval",
    "upper": "upper end of its interval",
    "reference": "the value it is compared with: (K−1)/K for the scaling identity, 7/15 for the audit's ξ1/ξ2",
    # scorecard
    "claim": "the claim's id (workflow/claims.yaml), or our own row's",
    "source": "`paper`, or `ours` for a question of this project",
    "figure": "the paper's figure the claim is read from",
    "check": "the claim's check: `equal`, `constant`, `increasing`, ... ([claims.md](claims.md))",
    "paper": "what the paper says, in its words",
    "paper_value": "the paper's value",
    "paper_spread": "the paper's ±, where it gives one",
    "ours_mean": "our value: mean over seeds (or the estimate)",
    "ours_sd": "its sd over seeds (or its standard error)",
    "test_se": "the test set's sampling error",
    "paper_se": "the paper's sampling error at the test size assumed for it",
    "z": "difference in units of the combined spread, at the point farthest from agreeing",
    "statistic": "χ² over all the claim's points",
    "dof": "its degrees of freedom",
    "limit": "its limit at the verdict's level",
    "points": "how many points the claim has",
    "points_run": "how many of them this run has",
    "verdict": "`agrees`, `agrees in direction`, `differs` or `not run` (docs/claims.md)",
    "reading": "what a *differs* reads as (e.g. `still rising`)",
    "why": "a *differs*: `explained` (a reason in docs/claims.md), `marginal` (χ² within its 99.73% limit) or "
    "`not explained`",
    "reason": "the anchor of the claim's reason in docs/claims.md, where it has one",
    "post_hoc": "why the row is post-hoc (a hypothesis chosen after seeing a run); empty otherwise",
    "chance": "counted in the chance line: a level test with a spread on our side, run, not post-hoc",
    "test_sizes": "the verdicts at the other test sizes assumed for the paper, where they differ",
    "paper_test_size": "the test size assumed for the paper's numbers (workflow/claims.yaml; 0: none)",
    "paper_test_sizes": "the other assumed test sizes the verdict is recomputed at",
    "untested": "a part of the paper's sentence the check does not test",
    "detail": "every point, ours against the paper's (or what is not in this run)",
    "note": "the claim's note: what we compare and why",
}
#: where the headline table's column means something else than a run table's of the same name
SUMMARY_MEANINGS = {
    "xi1": "ξ1 of the scaling identity's point `(ξ1, ξ2)` on the family, where the row is of one",
    "xi2": "ξ2 of that point",
    "test_set": "the test set, where the row is of one",
}
for _package in provenance.PACKAGES:
    MEANINGS[_package] = f"the installed version of {_package} (`{provenance.MISSING}` where it is not)"
MEANINGS["python"] = "the Python version"


def train_run_columns() -> list[tuple[str, str]]:
    """``(column, meaning)`` of a training run's table, in its order."""
    metrics = [c for m in METRICS for c in (m, se_column(m))]
    parameters = list(diagnostics(np.eye(4), 2, 1))
    kind = KINDS["train"]
    settings = [(key, setting(key)) for key in (*kind.settings_keys, *kind.eval_keys)]
    return [
        *described(ID_COLUMNS),
        *described(metrics),
        *described(parameters),
        *described(["minibatch_loss"]),
        *settings,
        *described(RUN_RECORD),
        *described(provenance.KEYS),
        *described(provenance.ACCELERATOR_KEYS),
        *described(provenance.CODE_KEYS),
    ]


def summary_columns() -> list[tuple[str, str]]:
    from onenn.analysis.summary import COLUMNS

    columns = [*COLUMNS, *provenance.KEYS, *provenance.ACCELERATOR_KEYS, *provenance.CODE_KEYS]
    return described(columns, SUMMARY_MEANINGS)


def scorecard_columns() -> list[tuple[str, str]]:
    from onenn.analysis.scorecard import COLUMNS

    return described(COLUMNS)


def setting(key: str) -> str:
    return f"the run's setting `{key}` ([configuration.md](configuration.md))"


def described(columns, meanings: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """``(column, meaning)`` of each column: from ``meanings`` (a table's own), else from ``MEANINGS``."""
    out = []
    for column in columns:
        meaning = (meanings or {}).get(column) or MEANINGS.get(column)
        if meaning is None and column.endswith("_se") and column.removesuffix("_se") in MEANINGS:
            meaning = MEANINGS["se"]
        if meaning is None:
            raise KeyError(f"column {column!r} has no meaning in tools/column_docs.py MEANINGS: add one")
        out.append((column, meaning))
    return out


#: the tables: (title, where they are, their columns)
TABLES = (
    (
        "A training run's table",
        (
            "`results/runs/{experiment}/{variant}/seed{seed}/metrics.parquet`, one row per saved step and test set; "
            "a `train` experiment's `results/tables/{experiment}.parquet` is its runs' tables one after the other"
        ),
        train_run_columns,
    ),
    (
        "The headline table",
        "`results/tables/summary.parquet`, one row per experiment, variant and quantity",
        summary_columns,
    ),
    (
        "The scorecard",
        "`results/tables/claims.parquet`, one row per claim ([claims.md](claims.md))",
        scorecard_columns,
    ),
)


def page() -> str:
    lines = [
        "# The tables' columns",
        "",
        f"Written by `{COMMAND}` from the code that defines the columns: rerun it rather than edit this page.",
        "Read a table with `pandas.read_parquet`; the names are those of the glossary of",
        "[method.md §8](method.md#8-glossary). Not listed here yet: the tables of the `binary`, `scaling`, `audit`,",
        "`landscape` and `full_matrix` kinds.",
        "",
    ]
    for title, where, columns in TABLES:
        lines += [f"## {title}", "", f"{where}.", "", "| column | meaning |", "|---|---|"]
        lines += [f"| `{column}` | {meaning} |" for column, meaning in columns()]
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
