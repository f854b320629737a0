"""The kinds of experiment, each described once (docs/guide.md); the functions it names as ``"module:function"``
are resolved when a job runs (``onenn.jobs.columns.kind_function``), so the plan loads none of them."""

from dataclasses import dataclass

from onenn.base.columns import AUDIT_FIRST, BINARY_RUN_METRICS, ID_COLUMNS, METRICS
from onenn.base.paths import PAPER_EXPERIMENTS
from onenn.base.settings import job_keys

#: settings a training job depends on, and those only its evaluation depends on (reach them through the params)
TRAIN_KEYS = job_keys("train")
EVAL_KEYS = job_keys("evaluation")
#: the figures of training experiments, each grouping its curves by the settings the variants vary: those of the
#: paper's training experiments (named as they are), the theorem's regime, and any experiment's sweep
TRAIN_FIGURES = (*(e for e in PAPER_EXPERIMENTS if e != "scaling_identity"), "theorem_regime", "sweep")
#: where a table comes from: its runs' metrics or its variants' tables (concatenated), or its settings (computed)
TABLE_SOURCES = ("runs", "variants", "settings")
SUMMARY = "onenn.analysis.summary"
TABLES, BEYOND = "onenn.jobs.tables", "onenn.jobs.beyond"


@dataclass(frozen=True)
class Kind:
    """One kind of experiment: ``job`` makes its table, ``summarise`` headline rows, ``markdown`` their lines (each
    ``"module:function"``; by default ``{name}_summary`` and ``{name}_markdown`` of ``SUMMARY``)."""

    name: str
    table_source: str
    summarise: str = ""
    markdown: str = ""
    job: str | None = None
    id_columns: tuple[str, ...] = ()
    number_columns: tuple[str, ...] = ()
    scored: bool = False
    figures: tuple[str, ...] = ()  # the figures that draw its table (by default the one named as the kind)

    def __post_init__(self) -> None:
        object.__setattr__(self, "summarise", self.summarise or f"{SUMMARY}:{self.name}_summary")
        object.__setattr__(self, "markdown", self.markdown or f"{SUMMARY}:{self.name}_markdown")
        object.__setattr__(self, "figures", self.figures or (self.name,))
        if self.table_source not in TABLE_SOURCES:
            source = self.table_source
            raise ValueError(f"kind {self.name}: table_source must be one of {TABLE_SOURCES}; got {source!r}")
        if (self.job is None) != (self.table_source == "runs"):
            need = "no job (its runs are made by its rules)" if self.table_source == "runs" else "a job"
            raise ValueError(f"kind {self.name}: a kind whose table comes from {self.table_source} needs {need}")
        for role in ("summarise", "markdown", "job"):
            ref = getattr(self, role)
            if ref is not None and ref.count(":") != 1:
                raise ValueError(f"kind {self.name}: {role} must be 'module:function'; got {ref!r}")

    @property
    def settings_keys(self) -> tuple[str, ...]:
        """What its job (a run's training, a variant's or the table's computation) depends on."""
        return job_keys(self.name)


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("train", "runs", id_columns=ID_COLUMNS, number_columns=METRICS, scored=True, figures=TRAIN_FIGURES),
        Kind("scaling", "settings", job=f"{TABLES}:scaling_job", scored=True, figures=("scaling_identity",)),
        Kind("binary", "runs", id_columns=ID_COLUMNS, number_columns=BINARY_RUN_METRICS),
        Kind("audit", "variants", f"{SUMMARY}:audit_table_summary", job=f"{BEYOND}:audit_job", id_columns=AUDIT_FIRST),
        Kind("landscape", "settings", markdown=f"{SUMMARY}:values_markdown", job=f"{TABLES}:landscape_job"),
    )
}


def kind_named(name: str) -> Kind:
    """The kind ``name``; an unknown one is an error naming the kinds there are."""
    if name not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {name!r}")
    return KINDS[name]


#: the kinds whose variants the rule ``beyond`` computes
VARIANT_KINDS = tuple(name for name, kind in KINDS.items() if kind.table_source == "variants")


def kind_entries(kind: str) -> list[str]:
    """What the table or variant job of ``kind`` runs besides its own: the kind's job, or the concatenation."""
    return [kind_named(kind).job or f"{TABLES}:aggregate_job"]


def summary_entries() -> list[str]:
    """What the headline table runs: every kind's ``summarise`` and ``markdown``."""
    return sorted({ref for kind in KINDS.values() for ref in (kind.summarise, kind.markdown)})


#: the product ``work`` computes, kind by kind
WORK = {"train": "steps × batch × (N+1) × (d+K+1)²", "binary": "epochs × train_size × (N+1) × (d+2)²"}
WORK |= {"audit": "steps × (n_plain + n_max × n_gap) × N"}
WORK |= {"landscape": "grid² × prompts × N", "scaling": "(points × Ks × prompts, over the panels) × N × d"}


def work(kind: str, s: dict) -> dict[str, float]:
    """A run's work as factors (the setting that sizes each -> its size) whose product grows as its multiply-adds.
    A scaling experiment's factor ``panels`` counts its points × K × prompts."""
    D2 = (s["d"] + (s["K"] if kind == "train" else 1) + 1) ** 2  # (D = d + K + 1; a binary model's K is 1)
    if kind in ("train", "binary"):  # a binary epoch: train_size prompts
        first, size = {"train": ("steps", "batch"), "binary": ("epochs", "train_size")}[kind]
        return {first: s[first], size: s[size], "N": s["N"] + 1, "d": D2}
    if kind == "audit":  # the GD steps on the weighted sample; the population flow's nodes: audit_problems
        return {"steps": s["steps"], "n_plain": s["n_plain"] + s["n_max"] * s["n_gap"], "N": s["N"]}
    if kind == "landscape":
        return {"grid": s["grid"] ** 2, "prompts": s["prompts"], "N": s["N"]}
    if kind == "scaling":
        points = sum(len(p["xi"]) * len(p["K"]) * p["prompts"] for p in s["panels"].values())
        return {"panels": points, "N": s["N"], "d": s["d"]}
    return {}  # a new kind: unbounded until it is given a product here
