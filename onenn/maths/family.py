"""The two-parameter family ``diag{ξ1·I_d, 0, −ξ2}`` and the parameter diagnostics of docs/method.md §5 (numpy only)."""

from __future__ import annotations

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


def project(W: np.ndarray, d: int, m: int) -> np.ndarray:
    """``Π(W)``, the Frobenius projection onto the family."""
    return family_matrix(*xi(W, d), d, m)


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
