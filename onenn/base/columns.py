"""The names and types of the tables' columns, and the spelling of a variant's name: one definition, used by
the layers that write tables (training, theory, analysis), the plan and the jobs that check them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: the identity columns of a run's table: which run, which saved step, which test set
ID_COLUMNS = ("experiment", "variant", "seed", "step", "test_set")
#: the metrics of a run's table, per saved step and test set: a multiclass run's (onenn.analysis.evaluate) and a
#: binary run's (no argmax accuracy with real-valued labels)
METRICS = ("logit_error", "accuracy", "test_loss")
BINARY_RUN_METRICS = ("nn_mse", "test_loss")


def se_column(metric: str) -> str:
    """``'accuracy' -> 'accuracy_se'``: the column of a metric's standard error over the test set's prompts
    (sample sd / √n), written beside each metric of ``METRICS`` and ``BINARY_RUN_METRICS``. Not required of a
    table: tables written before these columns lack them, and the scorecard then bounds the error
    (docs/claims.md)."""
    return f"{metric}_se"


#: the values of the ``test_set`` column: the multiclass experiments' test sets, and the binary experiment's prompt
#: sets, its fixed training set ``train`` (evaluated like a test set) first. onenn.prompts, which draws them, names
#: them too (the mathematics does not import the foundation); a test holds the two equal
TEST_SETS = ("uniform", "separated")
BINARY_TEST_SETS = ("train", *TEST_SETS)
#: the first columns of an audit variant's table and of a full-matrix one, in order
AUDIT_FIRST = ("experiment", "variant", "sigma_rule", "sigma", "source", "step", "time")
FULL_MATRIX_FIRST = ("experiment", "variant", "step")


def normalise_types(table: pd.DataFrame) -> pd.DataFrame:
    """Integers as int64, reals as float64, text as strings: stable Parquet types across runs."""
    table = table.copy()
    for col in table.columns:
        kind = table[col].dtype.kind
        if kind in "iub":
            table[col] = table[col].astype("int64" if kind != "b" else "bool")
        elif kind == "f":
            table[col] = table[col].astype("float64")
        else:
            table[col] = table[col].astype("string")
    return table


def format_value(value: Any) -> str:
    """``3.0 -> '3'``, ``0.1 -> '0.1'``, ``'label' -> 'label'``: the spelling used in paths."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


#: joins the key=value pairs of a variant name (never a comma: a comma would split Snakemake's wildcards)
NAME_SEPARATOR = "+"


def variant_name(overrides: dict[str, Any]) -> str:
    """``{"N": 16, "K": 3} -> 'N=16+K=3'``; no overrides: ``'default'``."""
    if not overrides:
        return "default"
    return NAME_SEPARATOR.join(f"{k}={format_value(v)}" for k, v in overrides.items())
