"""The code each rule runs, as ``params`` entries (one ``module=fingerprint`` per module its job runs), so that
Snakemake reruns exactly the jobs whose code changed (docs/configuration.md, "What reruns when")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from onenn.base.fingerprint import fingerprints, param_name
from onenn.plan.kinds import KINDS, kind_named

#: what every workflow script runs besides its job: the job's log
LOG = "onenn.jobs.logs"
#: the function of the table job that concatenates the tables of a kind without a ``job`` of its own
AGGREGATE = "onenn.jobs.tables:aggregate_job"


def params(*entries: str) -> dict[str, str]:
    """``{code_onenn_losses: "onenn.maths.losses=0123456789ab", ...}``: a rule's ``params`` for the code of ``entries``
    (``onenn.base.fingerprint.closure``) and the job log."""
    return {param_name(m): f"{m}={h}" for m, h in fingerprints(*entries, LOG).items()}


def params_by_kind(
    entries: Sequence[str],
    kind_entries: Callable[[str], Sequence[str]],
    kind_of: Callable[[Any], str],
    kinds: Sequence[str] = tuple(KINDS),
) -> dict[str, Callable[[Any], str]]:
    """A rule's ``params`` for kind-dependent job code: per-kind fingerprints of ``entries`` and ``kind_entries(kind)``,
    as functions of the wildcards (``kind_of`` gives their kind)."""
    per_kind = {kind: fingerprints(*entries, *kind_entries(kind), LOG) for kind in kinds}
    modules = sorted({m for found in per_kind.values() for m in found})

    def value(module: str) -> Callable[[Any], str]:
        def of(wildcards: Any) -> str:
            found = per_kind[kind_of(wildcards)]
            return f"{module}={found[module]}" if module in found else ""

        return of

    return {param_name(m): value(m) for m in modules}


def kind_entries(kind: str) -> list[str]:
    """What the table or variant job of ``kind`` runs besides its own: the kind's job, or the concatenation."""
    return [kind_named(kind).job or AGGREGATE]


#: the kinds whose variants the rule ``beyond`` computes
VARIANT_KINDS = tuple(name for name, kind in KINDS.items() if kind.table_source == "variants")


def summary_entries() -> list[str]:
    """What the headline table runs: every kind's ``summarise`` and ``markdown``."""
    return sorted({ref for kind in KINDS.values() for ref in (kind.summarise, kind.markdown)})
