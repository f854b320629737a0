"""What every column of every table the workflow writes means: each table's descriptions, put together from the
registries kept beside the code that makes the columns (``onenn.base.columns`` says where they are). The jobs give
them to ``onenn.base.io.save_table``, which writes them into the Parquet schema as the fields' metadata, and
``python -m tools.docs columns`` writes them into docs/columns.md.

Each function returns ``{column: description}`` in the order the page lists the columns: the table's identity, its
own columns, the settings it carries, then the software that made it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

from onenn.base import provenance
from onenn.base.columns import (
    BINARY_RUN_METRICS,
    BINARY_TEST_SET_DESCRIPTION,
    ID_DESCRIPTIONS,
    METRICS,
    first_wins,
    metric_descriptions,
    setting_description,
)
from onenn.maths.family import DIAGNOSTICS_DESCRIPTIONS
from onenn.plan.kinds import kind_named

#: the settings the landscape job writes into its table (the grid's own settings make its ``xi1, xi2`` instead)
LANDSCAPE_SETTING_COLUMNS = ("d", "N", "prompts", "seed")


def registry(module: str, name: str) -> dict[str, str]:
    """The descriptions ``name`` of ``module``, imported by name: a job's code fingerprint (onenn.base.fingerprint)
    follows imports, and a table's job already runs the module that makes its columns (its kind's job, the
    concatenation, the summary or the scorecard), so that one kind's table does not rerun when another kind's code
    changes. An import statement here would put every table's code into every table job's fingerprint."""
    return getattr(importlib.import_module(module), name)


def settings(keys: Iterable[str]) -> dict[str, str]:
    return {key: setting_description(key) for key in keys}


def software(*, accelerator: bool = False) -> dict[str, str]:
    """The versions, the GPU (``accelerator``: a training run's record has it) and the code that made a table."""
    keys = (*provenance.KEYS, *(provenance.ACCELERATOR_KEYS if accelerator else ()), *provenance.CODE_KEYS)
    return {key: provenance.DESCRIPTIONS[key] for key in keys}


def identity(*columns: str) -> dict[str, str]:
    return {column: ID_DESCRIPTIONS[column] for column in columns}


def train() -> dict[str, str]:
    """A multiclass run's table (``results/runs/.../metrics.parquet``) and a ``train`` experiment's."""
    RUN_TABLE_DESCRIPTIONS = registry("onenn.analysis.tables", "RUN_TABLE_DESCRIPTIONS")
    RECORD_DESCRIPTIONS = registry("onenn.jobs.train", "RECORD_DESCRIPTIONS")

    kind = kind_named("train")
    return first_wins(
        ID_DESCRIPTIONS,
        metric_descriptions(METRICS),
        DIAGNOSTICS_DESCRIPTIONS,
        RUN_TABLE_DESCRIPTIONS,
        settings((*kind.settings_keys, *kind.eval_keys)),
        RECORD_DESCRIPTIONS,
        software(accelerator=True),
    )


def binary() -> dict[str, str]:
    """A binary run's table and a ``binary`` experiment's."""
    RUN_TABLE_DESCRIPTIONS = registry("onenn.analysis.tables", "RUN_TABLE_DESCRIPTIONS")
    BINARY_RECORD_DESCRIPTIONS = registry("onenn.jobs.train", "BINARY_RECORD_DESCRIPTIONS")

    kind = kind_named("binary")
    return first_wins(
        {**ID_DESCRIPTIONS, "test_set": BINARY_TEST_SET_DESCRIPTION},
        metric_descriptions(BINARY_RUN_METRICS),
        DIAGNOSTICS_DESCRIPTIONS,
        RUN_TABLE_DESCRIPTIONS,
        settings((*kind.settings_keys, *kind.eval_keys)),
        BINARY_RECORD_DESCRIPTIONS,
        software(),
    )


def scaling() -> dict[str, str]:
    DESCRIPTIONS = registry("onenn.theory.scaling", "DESCRIPTIONS")

    return first_wins(identity("experiment"), DESCRIPTIONS, settings(kind_named("scaling").settings_keys), software())


def landscape() -> dict[str, str]:
    DESCRIPTIONS = registry("onenn.theory.landscape", "DESCRIPTIONS")

    return first_wins(identity("experiment"), DESCRIPTIONS, settings(LANDSCAPE_SETTING_COLUMNS), software())


def audit() -> dict[str, str]:
    DESCRIPTIONS = registry("onenn.theory.audit", "DESCRIPTIONS")

    keys = kind_named("audit").settings_keys
    return first_wins(identity("experiment", "variant"), DESCRIPTIONS, settings(keys), software())


def full_matrix() -> dict[str, str]:
    DESCRIPTIONS = registry("onenn.theory.full_matrix", "DESCRIPTIONS")

    keys = kind_named("full_matrix").settings_keys
    return first_wins(identity("experiment", "variant"), DESCRIPTIONS, settings(keys), software())


def summary() -> dict[str, str]:
    """The headline table (``results/tables/summary.parquet``)."""
    DESCRIPTIONS = registry("onenn.analysis.summary", "DESCRIPTIONS")
    SOFTWARE_DESCRIPTIONS = registry("onenn.analysis.summary", "SOFTWARE_DESCRIPTIONS")

    return first_wins(DESCRIPTIONS, SOFTWARE_DESCRIPTIONS, software(accelerator=True))


def claims() -> dict[str, str]:
    """The scorecard (``results/tables/claims.parquet``)."""
    DESCRIPTIONS = registry("onenn.analysis.scorecard", "DESCRIPTIONS")

    return dict(DESCRIPTIONS)


#: every table the workflow writes, by name: a kind's (its runs' or variants' tables and the experiment's), the
#: headline table's and the scorecard's
TABLES: dict[str, Callable[[], dict[str, str]]] = {
    "train": train,
    "binary": binary,
    "scaling": scaling,
    "landscape": landscape,
    "audit": audit,
    "full_matrix": full_matrix,
    "summary": summary,
    "claims": claims,
}


def descriptions(table: str) -> dict[str, str]:
    """``{column: description}`` of the table ``table`` (a kind's name, ``summary`` or ``claims``)."""
    if table not in TABLES:
        raise ValueError(f"table must be one of {', '.join(TABLES)}; got {table!r}")
    return TABLES[table]()
