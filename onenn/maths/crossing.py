"""Where a trajectory's ``xi1/xi2`` first crosses Lemma 12's bound 7/15: the one crossing every page quotes."""

from __future__ import annotations

import math

import numpy as np

from onenn.maths.family import XI_RATIO_BOUND


def crossing(time, xi1, xi2, bound: float = XI_RATIO_BOUND) -> tuple[float, float, float]:
    """``(t, xi1, xi2)`` where ``xi1/xi2`` first exceeds ``bound``, interpolated linearly in the ratio (``t`` in log
    time, linear from 0): the first point if it is above already; NaNs if never. A flow run with ``bound`` records
    a row at its crossing (the audit's population flows): then that row, up to rounding."""
    time, xi1, xi2 = (np.asarray(v, dtype=np.float64) for v in (time, xi1, xi2))
    ratio = xi1 / xi2
    above = np.flatnonzero(ratio > bound)
    if not above.size:
        return math.nan, math.nan, math.nan
    k = int(above[0])
    if k == 0:
        return float(time[0]), float(xi1[0]), float(xi2[0])
    share = float((bound - ratio[k - 1]) / (ratio[k] - ratio[k - 1]))
    a, b = time[k - 1], time[k]
    t = float(np.exp(np.log(a) + share * (np.log(b) - np.log(a)))) if a > 0 else float(a + share * (b - a))
    return (t, *(float(v[k - 1] + share * (v[k] - v[k - 1])) for v in (xi1, xi2)))
