"""What every column of every table the workflow writes means (written into the Parquet schema and docs/columns.md),
what a table read must have, and the functions a kind of experiment names (``onenn.plan.kinds``)."""

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
    normalise_types,
    setting_description,
)
from onenn.base.io import save_table
from onenn.jobs.inputs import ANY, NUMBER
from onenn.maths.family import DIAGNOSTICS_DESCRIPTIONS
from onenn.plan.kinds import EVAL_KEYS, kind_named

#: the settings the landscape job writes into its table (the grid's own settings make its ``xi1, xi2`` instead)
LANDSCAPE_SETTING_COLUMNS = ("d", "N", "prompts", "seed")
#: a binary run's ids: its prompt set is one of the test sets or its training set
BINARY_IDS = {**ID_DESCRIPTIONS, "test_set": BINARY_TEST_SET_DESCRIPTION}


def registry(module: str, name: str) -> dict[str, str]:
    """The descriptions ``name`` of ``module``, imported by name so that the fingerprint of a table job (which follows
    imports) holds only its own kind's code."""
    return getattr(importlib.import_module(module), name)


def software(*, accelerator: bool = False) -> dict[str, str]:
    """The versions, the GPU (``accelerator``: a training run's record has it) and the code that made a table."""
    keys = (*provenance.KEYS, *(provenance.ACCELERATOR_KEYS if accelerator else ()), *provenance.CODE_KEYS)
    return {key: provenance.DESCRIPTIONS[key] for key in keys}


def run_table(kind: str, record: str, ids: dict[str, str], metrics: tuple[str, ...], **software_of) -> dict[str, str]:
    """A run's table (``results/runs/.../metrics.parquet``) and its experiment's, of kind ``train`` or ``binary``."""
    return first_wins(
        ids,
        metric_descriptions(metrics),
        DIAGNOSTICS_DESCRIPTIONS,
        registry("onenn.analysis.tables", "RUN_TABLE_DESCRIPTIONS"),
        {key: setting_description(key) for key in (*kind_named(kind).settings_keys, *EVAL_KEYS)},
        registry("onenn.jobs.train", record),
        software(**software_of),
    )


def computed(kind: str, module: str, ids: tuple[str, ...], keys: Iterable[str] | None = None) -> dict[str, str]:
    """A table the job of ``kind`` computes: its ids, ``module``'s ``DESCRIPTIONS``, its ``keys`` (the kind's settings)."""
    ids_described = {column: ID_DESCRIPTIONS[column] for column in ids}
    keys = kind_named(kind).settings_keys if keys is None else keys
    keys_described = {key: setting_description(key) for key in keys}
    return first_wins(ids_described, registry(module, "DESCRIPTIONS"), keys_described, software())


#: every table the workflow writes, by name: a kind's (its runs' or variants' and the experiment's), the headline
#: table's and the scorecard's
TABLES: dict[str, Callable[[], dict[str, str]]] = {
    "train": lambda: run_table("train", "RECORD_DESCRIPTIONS", ID_DESCRIPTIONS, METRICS, accelerator=True),
    "binary": lambda: run_table("binary", "BINARY_RECORD_DESCRIPTIONS", BINARY_IDS, BINARY_RUN_METRICS),
    "scaling": lambda: computed("scaling", "onenn.theory.scaling", ("experiment",)),
    "landscape": lambda: computed("landscape", "onenn.theory.landscape", ("experiment",), LANDSCAPE_SETTING_COLUMNS),
    "audit": lambda: computed("audit", "onenn.theory.audit", ("experiment", "variant")),
    "summary": lambda: first_wins(
        registry("onenn.analysis.summary", "DESCRIPTIONS"),
        registry("onenn.analysis.summary", "SOFTWARE_DESCRIPTIONS"),
        software(accelerator=True),
    ),
    "claims": lambda: dict(registry("onenn.analysis.scorecard", "DESCRIPTIONS")),
}


def descriptions(table: str) -> dict[str, str]:
    """``{column: description}`` of the table ``table`` (a kind's name, ``summary`` or ``claims``)."""
    if table not in TABLES:
        raise ValueError(f"table must be one of {', '.join(TABLES)}; got {table!r}")
    return TABLES[table]()


def save_kind_table(kind: str, table, output: str, info: dict) -> None:
    """``table`` of ``kind``'s job, its ``id_columns`` first, with ``info``, the versions and the code in every row."""
    table = table.assign(**{**info, **provenance.versions(), **provenance.code_provenance(kind_named(kind).job)})
    first = list(kind_named(kind).id_columns)
    save_table(output, normalise_types(table[first + [c for c in table.columns if c not in first]]), descriptions(kind))


def table_columns(kind: str) -> dict[str, str]:
    """What a table of ``kind`` (or of its runs, variants) must have for ``load_checked_table``; none if computed."""
    k = kind_named(kind)
    return {**dict.fromkeys(k.id_columns, ANY), **dict.fromkeys(k.number_columns, NUMBER)}


def kind_function(kind: str, role: str) -> Callable:
    """The function ``role`` (``job``, ``summarise``, ``markdown``) of kind ``kind``, imported when a job runs."""
    ref = getattr(kind_named(kind), role)
    if ref is None:
        raise ValueError(f"kind {kind!r} has no {role} (onenn/plan/kinds.py)")
    module, _, name = ref.partition(":")
    found = getattr(importlib.import_module(module), name, None)
    if not callable(found):
        raise TypeError(f"kind {kind!r}: its {role} {ref!r} is not a function of {module} (onenn/plan/kinds.py)")
    return found
