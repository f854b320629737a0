"""Where a trajectory's ``xi1/xi2`` first crosses Lemma 12's bound 7/15: one interpolation for every page that
quotes a crossing (the audit's table, the proof's inequalities)."""

from __future__ import annotations

import numpy as np

from onenn.maths.family import XI_RATIO_BOUND


def ratio_crossing(time: np.ndarray, ratio: np.ndarray, bound: float = XI_RATIO_BOUND) -> tuple[float, int, float]:
    """Where ``ratio`` (``xi1/xi2`` at the recorded, increasing ``time``) first exceeds ``bound``: ``(t, k, share)``
    with ``k`` the first recorded point above it and ``share`` the fraction of the way from point ``k - 1`` to ``k``
    at which the ratio, linear between them, meets the bound. ``t`` is interpolated at that share in log time (the
    audit records log-spaced times), linearly where the earlier time is 0. ``(nan, -1, nan)`` if it never exceeds it;
    ``(time[0], 0, 0.0)`` if the first point does."""
    ratio, time = np.asarray(ratio, dtype=np.float64), np.asarray(time, dtype=np.float64)
    above = np.flatnonzero(ratio > bound)
    if not above.size:
        return float("nan"), -1, float("nan")
    k = int(above[0])
    if k == 0:
        return float(time[0]), 0, 0.0
    share = float((bound - ratio[k - 1]) / (ratio[k] - ratio[k - 1]))
    if time[k - 1] > 0:
        return float(np.exp(np.log(time[k - 1]) + share * (np.log(time[k]) - np.log(time[k - 1])))), k, share
    return float(time[k - 1] + share * (time[k] - time[k - 1])), k, share
