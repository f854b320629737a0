"""The two-parameter family ``diag{ξ1·I_d, 0, −ξ2}``, the parameter diagnostics of docs/method.md §5 and where a
trajectory's ``xi1/xi2`` first crosses Lemma 12's bound 7/15 (the one crossing every page quotes); numpy only."""

import math

import numpy as np

#: Lemma 12's invariant of the binary paper on the family: ``xi1 <= (7/15) xi2``.
XI_RATIO_BOUND = 7.0 / 15.0


#: what the columns of ``diagnostics`` mean, where a table has them
DIAGNOSTICS_DESCRIPTIONS = {
    "xi1": "ξ1 of the Frobenius projection of `W` onto the family `diag{ξ1·I, 0, −ξ2}`",
    "xi2": "ξ2 of that projection",
    "dist_family": "Frobenius distance of `W` to the family, over the whole matrix",
    "dist_family_active": "the same over the blocks the loss depends on (all but the label columns)",
    "label_norm": "Frobenius norm of the label columns of `W`",
}


def xi(W: np.ndarray, d: int) -> tuple[float, float]:
    """``(ξ1, ξ2)`` of the Frobenius projection ``Π(W)``: the mean of ``diag(W11)`` and ``−W33``."""
    return float(np.trace(W[:d, :d]) / d), float(-W[-1, -1])


def family_matrix(xi1: float, xi2: float, d: int, m: int) -> np.ndarray:
    """``diag{ξ1·I_d, 0_m, −ξ2}``: (D, D)."""
    return np.diag(np.concatenate([np.full(d, xi1), np.zeros(m), [-xi2]]))


def diagnostics(W: np.ndarray, d: int, m: int) -> dict[str, float]:
    """``ξ1, ξ2``, the distance to the family (whole, and over all but the label columns), the label columns' norm."""
    xi1, xi2 = xi(W, d)
    off = W - family_matrix(xi1, xi2, d, m)
    labels = slice(d, d + m)  # the columns that multiply the query's zero label block (W12, W22, W32)
    return {
        "xi1": xi1,
        "xi2": xi2,
        "dist_family": float(np.linalg.norm(off)),
        "dist_family_active": float(np.linalg.norm(off[:, np.r_[:d, d + m : W.shape[1]]])),  # all but the labels
        "label_norm": float(np.linalg.norm(W[:, labels])),
    }


def crossing(time, xi1, xi2, bound: float = XI_RATIO_BOUND) -> tuple[float, float, float]:
    """``(t, xi1, xi2)`` where ``xi1/xi2`` first exceeds ``bound``, interpolated linearly in the ratio (``t`` in log
    time, linear from 0); the first point if above already (a flow run with ``bound`` has a row there); NaNs if never."""
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
