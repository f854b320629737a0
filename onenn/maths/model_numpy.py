"""The model of ``onenn.maths.model`` and the losses of ``onenn.maths.losses`` in numpy, float64: what computes without torch.

``onenn.maths.model`` and ``onenn.maths.losses`` stay the readable definitions; this module repeats their forward pass, the
simplex code and the per-prompt loss values, so that the jobs that only evaluate a model (the evaluation of a run,
``onenn.analysis.evaluate``; the scaling identity, ``onenn.theory.scaling``) never import torch, whose import alone
costs about 1.6 s of CPU, more than an evaluation itself (docs/performance.md, per-job fixed cost).
``tests/unit/test_evaluate.py`` holds it to the torch definitions (to 1e-12, every loss). The loss names come from the
registry of ``onenn.maths.losses``, which imports no torch; a registered loss missing here is refused by name
(``check_loss``).

Prompts are token rows as in ``onenn.maths.model``: ``x`` (B, N+1, d) with the query last, ``Y`` (B, N, m) the label
vectors of the context, ``D = d + m + 1``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onenn.maths.losses import require_loss


def simplex_code(K: int) -> np.ndarray:
    """Rows ``u_c = e_c - (1/K) 1_K`` for ``c = 0..K-1`` (``onenn.maths.model.simplex_code``).  # (K, K)"""
    if K < 2:
        raise ValueError(f"K must be >= 2 (the number of classes), got {K}")
    return np.eye(K) - 1.0 / K


def forward(W: np.ndarray, x: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Attention weights ``q`` (B, N+1) and the output ``ℓ = Σ_{j<=N} q_j y_j`` (B, m) (``onenn.maths.model.forward``).
    Batched matrix products rather than ``einsum``: three to five times faster in numpy."""
    d, m = x.shape[-1], Y.shape[-1]
    x_query = np.ascontiguousarray(x[:, -1, :])  # (B, d)
    v = x_query @ np.ascontiguousarray(W[:, :d].T) + W[:, -1]  # W h_{N+1}: (B, D); contiguous: BLAS
    scores = (x @ v[:, :d, None])[..., 0]  # x-part of every token, query included: (B, N+1)
    scores[:, :-1] += (Y @ v[:, d : d + m, None])[..., 0]
    scores[:, -1] += v[:, -1]
    q = np.exp(scores - scores.max(axis=-1, keepdims=True))
    q /= q.sum(axis=-1, keepdims=True)
    # einsum sums over j in order, as torch does: at xi1 = 0 the output is the context's plurality vote, classes
    # with equal counts tie up to rounding, and this order breaks the ties as onenn.maths.model.forward does
    ell = np.einsum("bj,bjm->bm", q[:, :-1], Y)  # (B, m)
    return q, ell


def log_softmax(ell: np.ndarray) -> np.ndarray:
    """``log softmax(ℓ)`` along the last axis, shifted by the maximum as torch does."""
    shifted = ell - ell.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def square(ell: np.ndarray, target_class: np.ndarray | None, y_target: np.ndarray, c: float) -> np.ndarray:
    """``½‖ℓ − y*‖²``."""
    return 0.5 * ((ell - y_target) ** 2).sum(-1)


def cross_entropy(ell: np.ndarray, target_class: np.ndarray, y_target: np.ndarray, c: float) -> np.ndarray:
    """``−log softmax(ℓ)_{c*}``."""
    return -np.take_along_axis(log_softmax(ell), target_class[:, None], axis=-1)[:, 0]


def squentropy(ell: np.ndarray, target_class: np.ndarray, y_target: np.ndarray, c: float) -> np.ndarray:
    """Cross entropy plus ``(1/(K−1)) Σ_{k≠c*} ℓ_k²``."""
    K = ell.shape[-1]
    off_target = np.ones_like(ell)
    np.put_along_axis(off_target, target_class[:, None], 0.0, axis=-1)
    return cross_entropy(ell, target_class, y_target, c) + (off_target * ell**2).sum(-1) / (K - 1)


def mixture(ell: np.ndarray, target_class: np.ndarray, y_target: np.ndarray, c: float) -> np.ndarray:
    """``(1 − c)`` square plus ``c`` cross entropy."""
    return (1 - c) * square(ell, target_class, y_target, c) + c * cross_entropy(ell, target_class, y_target, c)


#: the per-prompt loss values of ``onenn.maths.losses.LOSSES``, by name: ``(ell, target_class, y_target, c) -> (B,)``
LOSS_VALUES: dict[str, Callable[..., np.ndarray]] = {
    "square": square,
    "cross_entropy": cross_entropy,
    "mixture": mixture,
    "squentropy": squentropy,
}


def check_loss(loss: str) -> None:
    """Raise, naming what to add, if ``loss`` is not a loss of ``onenn.maths.losses`` or has no numpy values here."""
    require_loss(
        loss,
        LOSS_VALUES,
        "the numpy model (onenn/maths/model_numpy.py)",
        "a function (ell, target_class, y_target, c) -> (B,) to onenn/maths/model_numpy.py and its entry to "
        "LOSS_VALUES there",
    )


def loss_values(
    loss: str, c: float, ell: np.ndarray, target_class: np.ndarray | None, y_target: np.ndarray
) -> np.ndarray:
    """The per-prompt values (B,) of loss ``loss`` (mixture weight ``c``) of docs/method.md §2."""
    check_loss(loss)
    if target_class is None and loss != "square":
        raise ValueError(f"loss {loss!r} needs classes; the binary setting supports only 'square'")
    return LOSS_VALUES[loss](ell, target_class, y_target, c)
