"""The tables' columns (names, types, meanings: ``*_DESCRIPTIONS`` registries beside the code that makes them,
gathered by ``onenn.jobs.columns``, docs/columns.md) and the spelling of a variant's name, for every layer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: the identity columns of a run's table: which run, which saved step, which test set
ID_COLUMNS = ("experiment", "variant", "seed", "step", "test_set")
#: the metrics of a run's table, per saved step and test set: a multiclass run's (onenn.analysis.evaluate) and a
#: binary run's (no argmax accuracy with real-valued labels)
METRICS = ("logit_error", "accuracy", "test_loss")
BINARY_RUN_METRICS = ("nn_mse", "test_loss")

#: what the identity columns of a run's table mean
ID_DESCRIPTIONS = {
    "experiment": "the experiment's name (a key of `experiments:` in the config)",
    "variant": "the variant's name: `default`, or the settings it overrides as `key=value` joined by `+`",
    "seed": "the run's seed",
    "step": "the SGD step of the saved weights `W` (0: the start)",
    "test_set": "the test set: `uniform` or `separated` (method.md §3)",
}
#: what the metrics of ``METRICS`` and ``BINARY_RUN_METRICS`` mean
METRIC_DESCRIPTIONS = {
    "logit_error": "mean over the test prompts of `‖ℓ − u_{c_{i*}}‖²` (method.md §5.1)",
    "accuracy": "share of test prompts with `argmax ℓ = c_{i*}`: agreement with the 1-NN classifier",
    "nn_mse": "mean over the prompts of `(ŷ − y_{i*})²`: the squared distance of the output to the 1-NN label",
    "test_loss": "the run's own loss (its `loss`) on the test set",
}
SE_DESCRIPTION = "standard error over the test prompts (sample sd / √n) of the column it follows"


def se_column(metric: str) -> str:
    """``'accuracy' -> 'accuracy_se'``: the column of a metric's standard error beside it (not required of a table:
    older tables lack it, and the scorecard then bounds the error)."""
    return f"{metric}_se"


#: the values of the ``test_set`` column: the multiclass test sets, and the binary prompt sets (its training set
#: ``train`` first); onenn.maths.prompts names them too (the mathematics imports no foundation), a test holds them equal
TEST_SETS = ("uniform", "separated")
BINARY_TEST_SETS = ("train", *TEST_SETS)
BINARY_TEST_SET_DESCRIPTION = "the prompt set: the fixed training set `train`, `uniform` or `separated` (method.md §3)"
#: the first columns of an audit variant's table, in order
AUDIT_FIRST = ("experiment", "variant", "sigma_rule", "sigma", "source", "step", "time")


def setting_description(key: str) -> str:
    """What a column that holds the setting ``key`` of a run or a job means."""
    return f"the setting `{key}` ([guide.md](guide.md#configuration))"


def metric_descriptions(metrics: Iterable[str]) -> dict[str, str]:
    """``{metric: ..., metric_se: ...}`` for each of ``metrics``, in the order a run's table has them."""
    return dict(pair for m in metrics for pair in ((m, METRIC_DESCRIPTIONS[m]), (se_column(m), SE_DESCRIPTION)))


def first_wins(*registries: Mapping[str, str]) -> dict[str, str]:
    """The registries in one, each column where it first appears (a table's own meaning before a shared one)."""
    out: dict[str, str] = {}
    for registry in registries:
        out |= {column: description for column, description in registry.items() if column not in out}
    return out


class Undescribed(KeyError):
    """A table has a column that no registry describes."""


def check_described(columns: Iterable[str], descriptions: Mapping[str, str], table: str) -> None:
    """``Undescribed`` naming every column of ``columns`` that ``descriptions`` lacks (or describes as empty)."""
    missing = [c for c in columns if not descriptions.get(c)]
    if missing:
        raise Undescribed(
            f"the columns {missing} of {table} have no description: add a one-line one to the registry beside the "
            "code that makes them (onenn/base/columns.py says where they are), then run `python -m tools.docs columns`"
        )


def normalise_types(table: pd.DataFrame) -> pd.DataFrame:
    """Integers as int64, reals as float64, text as strings: stable Parquet types across runs."""
    types = {"i": "int64", "u": "int64", "b": "bool", "f": "float64"}
    return table.astype({col: types.get(table[col].dtype.kind, "string") for col in table.columns})


def format_value(value: Any) -> str:
    """``3.0 -> '3'``, ``0.1 -> '0.1'``, ``'label' -> 'label'``: the spelling used in paths."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


#: joins the key=value pairs of a variant name (never a comma: a comma would split Snakemake's wildcards)
NAME_SEPARATOR = "+"


def variant_name(overrides: dict[str, Any]) -> str:
    """``{"N": 16, "K": 3} -> 'N=16+K=3'``; no overrides: ``'default'``."""
    return NAME_SEPARATOR.join(f"{k}={format_value(v)}" for k, v in overrides.items()) or "default"
