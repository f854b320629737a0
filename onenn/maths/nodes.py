"""The population quadrature's node counts and the audit's times, as the config check and the audit job both check
them (plain Python: the Snakefile's check imports it)."""

from collections.abc import Mapping
from typing import Any

#: Gauss-Legendre nodes per panel (the node counts must be multiples of it)
PANEL = 8


def audit_problems(s: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(setting, message)`` for each node count of audit settings ``s`` that is not a multiple of its panels at the
    coarsest of ``s['levels']`` resolutions, and for a ``sample_time_end`` outside its range."""
    scale = 2 ** (s["levels"] - 1)
    out = []
    for key, unit in (("t1_nodes", 4 * PANEL), ("gap_nodes", PANEL), ("third_nodes", 1)):
        if isinstance(s[key], bool) or not isinstance(s[key], int) or s[key] <= 0 or s[key] % (unit * scale):
            multiple = f"a positive multiple of {unit * scale} ({unit} at the coarsest of levels={s['levels']})"
            out.append((key, f"must be {multiple}, got {s[key]!r}"))
    if not s["lr"] * s["steps"] < s["sample_time_end"] <= s["time_end"]:
        where = f"(lr * steps = {s['lr'] * s['steps']:g}, time_end = {s['time_end']:g}]"
        out.append(("sample_time_end", f"must lie in {where}, got {s['sample_time_end']!r}"))
    return out
