"""The kinds of experiment, each described once: what its jobs depend on, where its table comes from, which
figures draw it, what the headline table says of it and whether the scorecard reads it.

A ``Kind`` names the functions that do its work in the layers above the plan as ``"module:function"``, so that
the plan, which the Snakefile imports, loads none of them; the jobs resolve them when they run
(``onenn.jobs.kinds.kind_function``), and ``tests/unit/test_kinds.py`` resolves every one. A new kind is one more
entry of ``KINDS`` (docs/extending.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from onenn.base.columns import AUDIT_FIRST, BINARY_RUN_METRICS, FULL_MATRIX_FIRST, ID_COLUMNS, METRICS

#: settings a training job depends on (reach it through the rule's params)
TRAIN_KEYS = (
    "d",
    "N",
    "K",
    "sigma",
    "lr",
    "batch",
    "loss",
    "c",
    "epsilon",
    "noise_blocks",
    "steps",
    "n_eval",
    "device",
    "dtype",
    "on_divergence",
)
#: settings only the evaluation depends on
EVAL_KEYS = ("delta", "test_size")
#: settings a scaling-identity job depends on (besides its ``panels``)
SCALING_KEYS = ("d", "N", "seed", "ci_level")
#: settings of each kind's job (reach it through the rule's params); `seed` of a binary run is its run seed
BINARY_KEYS = ("d", "N", "sigma", "epsilon", "lr", "batch", "epochs", "train_size", "labels", "n_eval", "dtype")
BINARY_EVAL_KEYS = ("delta", "test_size")
AUDIT_KEYS = (
    "d",
    "N",
    "sigma",
    "lr",
    "steps",
    "time_end",
    "sample_time_end",
    "n_plain",
    "n_max",
    "n_gap",
    "gap_min",
    "t1_nodes",
    "gap_nodes",
    "third_nodes",
    "levels",
    "n_eval",
    "seed",
)
LANDSCAPE_KEYS = ("d", "N", "xi1_range", "xi2_range", "grid", "prompts", "seed")
FULL_MATRIX_KEYS = ("d", "N", "sigma", "lr", "steps", "prompts", "n_eval", "seed")

#: the figures of training experiments: each groups its curves by the settings the variants vary
TRAIN_FIGURES = (
    "convergence",
    "distribution_shift",
    "number_of_classes",
    "diagonal_init",
    "loss_function",
    "theorem_regime",
    "sweep",
)

#: where an experiment's table comes from: its runs' metrics or its variants' tables (the table job concatenates
#: them), or its settings (the table job computes it)
TABLE_SOURCES = ("runs", "variants", "settings")


@dataclass(frozen=True)
class Kind:
    """One kind of experiment. ``job`` computes the table (source ``settings``) or one variant's table (source
    ``variants``); the runs of a ``runs`` kind are made by its own rules. ``summarise`` turns its table into
    headline rows, ``markdown`` those rows into Markdown lines. ``id_columns`` (any type) and ``number_columns``
    (numbers) are what its tables must have where a job reads them."""

    name: str
    settings_keys: tuple[str, ...]
    table_source: str
    figures: tuple[str, ...]
    summarise: str
    markdown: str
    job: str | None = None
    eval_keys: tuple[str, ...] = ()
    id_columns: tuple[str, ...] = ()
    number_columns: tuple[str, ...] = ()
    scored: bool = False

    def __post_init__(self) -> None:
        if self.table_source not in TABLE_SOURCES:
            raise ValueError(
                f"kind {self.name}: table_source must be one of {TABLE_SOURCES}; got {self.table_source!r}"
            )
        if (self.job is None) != (self.table_source == "runs"):
            need = "no job (its runs are made by its rules)" if self.table_source == "runs" else "a job"
            raise ValueError(f"kind {self.name}: a kind whose table comes from {self.table_source} needs {need}")
        for role in ("summarise", "markdown", "job"):
            ref = getattr(self, role)
            if ref is not None and ref.count(":") != 1:
                raise ValueError(f"kind {self.name}: {role} must be 'module:function'; got {ref!r}")


SUMMARY = "onenn.analysis.summary"

KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            "train",
            TRAIN_KEYS,
            "runs",
            TRAIN_FIGURES,
            f"{SUMMARY}:train_summary",
            f"{SUMMARY}:train_markdown",
            eval_keys=EVAL_KEYS,
            id_columns=ID_COLUMNS,
            number_columns=METRICS,
            scored=True,
        ),
        Kind(
            "scaling",
            SCALING_KEYS,
            "settings",
            ("scaling_identity",),
            f"{SUMMARY}:scaling_summary",
            f"{SUMMARY}:scaling_markdown",
            job="onenn.jobs.tables:scaling_job",
            scored=True,
        ),
        Kind(
            "binary",
            BINARY_KEYS,
            "runs",
            ("binary",),
            f"{SUMMARY}:binary_summary",
            f"{SUMMARY}:binary_markdown",
            eval_keys=BINARY_EVAL_KEYS,
            id_columns=ID_COLUMNS,
            number_columns=BINARY_RUN_METRICS,
        ),
        Kind(
            "audit",
            AUDIT_KEYS,
            "variants",
            ("audit",),
            f"{SUMMARY}:audit_table_summary",
            f"{SUMMARY}:audit_markdown",
            job="onenn.jobs.beyond:audit_job",
            id_columns=AUDIT_FIRST,
        ),
        Kind(
            "landscape",
            LANDSCAPE_KEYS,
            "settings",
            ("landscape",),
            f"{SUMMARY}:landscape_summary",
            f"{SUMMARY}:values_markdown",
            job="onenn.jobs.tables:landscape_job",
        ),
        Kind(
            "full_matrix",
            FULL_MATRIX_KEYS,
            "variants",
            ("full_matrix",),
            f"{SUMMARY}:full_matrix_summary",
            f"{SUMMARY}:values_markdown",
            job="onenn.jobs.beyond:full_matrix_job",
            id_columns=FULL_MATRIX_FIRST,
        ),
    )
}


def kind_named(name: str) -> Kind:
    """The kind ``name``; an unknown one is an error naming the kinds there are."""
    if name not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {name!r}")
    return KINDS[name]
