"""The functions a kind of experiment names (``onenn.plan.kinds``), resolved when a job runs."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from onenn.jobs.inputs import ANY, NUMBER
from onenn.plan.kinds import kind_named


def kind_function(kind: str, role: str) -> Callable:
    """The function ``role`` (``job``, ``summarise``, ``markdown``) of kind ``kind``; an error names a kind that
    has none, or a function that is not where the kind says."""
    ref = getattr(kind_named(kind), role)
    if ref is None:
        raise ValueError(f"kind {kind!r} has no {role} (onenn/plan/kinds.py)")
    module, _, name = ref.partition(":")
    found = getattr(importlib.import_module(module), name, None)
    if not callable(found):
        raise TypeError(f"kind {kind!r}: its {role} {ref!r} is not a function of {module} (onenn/plan/kinds.py)")
    return found


def table_columns(kind: str) -> dict[str, str]:
    """The columns a table of an experiment of ``kind`` (or of one of its runs or variants) must have, as
    ``onenn.jobs.inputs.load_checked_table`` takes them; none for the kinds that compute their table."""
    k = kind_named(kind)
    return {**dict.fromkeys(k.id_columns, ANY), **dict.fromkeys(k.number_columns, NUMBER)}
