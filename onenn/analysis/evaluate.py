"""The metrics of docs/method.md §5 for every saved ``W`` of a run, on a test set, multiclass and binary.

numpy only, in float64: an evaluation job never imports torch, whose import alone costs about 1.6 s of CPU, more
than the evaluation itself (docs/performance.md, per-job fixed cost). The model and the losses are the ones of
``onenn.model`` and ``onenn.losses``, which stay their readable definition; this module repeats their forward
pass and loss values in numpy, and ``tests/test_evaluate.py`` holds it to them (to 1e-12, every loss). The loss
names come from the registry of ``onenn.losses``, which imports no torch; a registered loss missing here is
refused by name (``check_loss``).

Prompts are token rows as in ``onenn.model``: ``x`` (B, N+1, d) with the query last, ``Y`` (B, N, m) the label
vectors of the context, ``D = d + m + 1``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from onenn.base.columns import se_column
from onenn.family import diagnostics
from onenn.losses import require_loss

# --------------------------------------------------------------------------------------------------------
# The model and the losses (numpy mirrors of onenn.model and onenn.losses)
# --------------------------------------------------------------------------------------------------------


def simplex_code(K: int) -> np.ndarray:
    """Rows ``u_c = e_c - (1/K) 1_K`` for ``c = 0..K-1`` (``onenn.model.simplex_code``).  # (K, K)"""
    if K < 2:
        raise ValueError(f"K must be >= 2 (the number of classes), got {K}")
    return np.eye(K) - 1.0 / K


def forward(W: np.ndarray, x: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Attention weights ``q`` (B, N+1) and the output ``ℓ = Σ_{j<=N} q_j y_j`` (B, m) (``onenn.model.forward``).
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
    # with equal counts tie up to rounding, and this order breaks the ties as onenn.model.forward does
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


#: the per-prompt loss values of ``onenn.losses.LOSSES``, by name: ``(ell, target_class, y_target, c) -> (B,)``
LOSS_VALUES: dict[str, Callable[..., np.ndarray]] = {
    "square": square,
    "cross_entropy": cross_entropy,
    "mixture": mixture,
    "squentropy": squentropy,
}


def check_loss(loss: str) -> None:
    """Raise, naming what to add, if ``loss`` is not a loss of ``onenn.losses`` or has no numpy values here."""
    require_loss(
        loss,
        LOSS_VALUES,
        "the numpy evaluation (onenn/analysis/evaluate.py)",
        "a function (ell, target_class, y_target, c) -> (B,) to onenn/analysis/evaluate.py and its entry to "
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


# --------------------------------------------------------------------------------------------------------
# Multiclass
# --------------------------------------------------------------------------------------------------------


def mean_and_se(name: str, values: np.ndarray) -> dict[str, float]:
    """``{name: mean, name_se: sd / √n}``: the mean over the ``n`` prompts of a per-prompt value and its standard
    error, the sample sd (ddof 1) over the prompts divided by ``√n`` (NaN for a single prompt)."""
    n = len(values)
    se = float(np.std(values, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return {name: float(np.mean(values)), se_column(name): se}


def prompt_metrics(
    W: np.ndarray, x: np.ndarray, classes: np.ndarray, nn: np.ndarray, K: int, loss: str, c: float = 0.0
) -> dict[str, float]:
    """Mean logit error ``‖ℓ − u_{c_{i*}}‖²``, argmax accuracy against the 1-NN class, and the loss
    (``onenn.base.columns.METRICS``) of ``W`` on the prompts ``x`` (B, N+1, d), ``classes`` (B, N), ``nn`` (B,),
    each with its standard error over the prompts (``accuracy_se``, ...: ``mean_and_se``)."""
    return class_metrics(W, *class_arrays({"x": x, "classes": classes, "nn": nn}, K), loss, c)


def class_arrays(data: dict[str, np.ndarray], K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A test set's ``x`` (n, N+1, d), the context's label codes ``Y`` (n, N, K), the 1-NN class ``c_{i*}``
    (n,) and its code (n, K), in float64: made once a test set, not once a saved step."""
    codes = simplex_code(K)
    x = np.asarray(data["x"], np.float64)
    classes = np.asarray(data["classes"], np.int64)
    target_class = classes[np.arange(len(classes)), np.asarray(data["nn"], np.int64)]
    return x, codes[classes], target_class, codes[target_class]


def class_metrics(
    W: np.ndarray, x: np.ndarray, Y: np.ndarray, target_class: np.ndarray, y_target: np.ndarray, loss: str, c: float
) -> dict[str, float]:
    """``prompt_metrics`` on ``class_arrays``. Means are numpy's pairwise sums, whose last bit does not depend on
    the number of threads."""
    _, ell = forward(W, x, Y)
    return {
        **mean_and_se("logit_error", ((ell - y_target) ** 2).sum(-1)),
        **mean_and_se("accuracy", (ell.argmax(-1) == target_class).astype(np.float64)),
        **mean_and_se("test_loss", loss_values(loss, c, ell, target_class, y_target)),
    }


def evaluate_run(
    saved_steps: np.ndarray,
    weights: np.ndarray,
    test_sets: dict[str, dict[str, np.ndarray]],
    K: int,
    loss: str,
    c: float = 0.0,
) -> pd.DataFrame:
    """One row per (saved step, test set): the prompt metrics and the parameter diagnostics, in float64."""
    check_loss(loss)
    d = next(iter(test_sets.values()))["x"].shape[-1]
    arrays = {name: class_arrays(data, K) for name, data in test_sets.items()}
    rows = []
    for step, W_np in zip(saved_steps, weights):
        W = np.asarray(W_np, np.float64)
        params = diagnostics(W_np, d, K)
        for name, prepared in arrays.items():
            rows.append({"step": int(step), "test_set": name, **class_metrics(W, *prepared, loss, c), **params})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------------
# Binary (docs/method.md §7.1)
# --------------------------------------------------------------------------------------------------------


def binary_arrays(data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A binary prompt set's ``x`` (n, N+1, d), its labels as width-1 vectors ``Y`` (n, N, 1) and the 1-NN
    targets ``y_{i*}`` (n, 1), in float64."""
    x = np.asarray(data["x"], np.float64)
    y = np.asarray(data["y"], np.float64)
    nn = np.asarray(data["nn"], np.int64)
    return x, y[:, :, None], y[np.arange(len(nn)), nn][:, None]


def binary_metrics(W: np.ndarray, x: np.ndarray, Y: np.ndarray, target: np.ndarray) -> dict[str, float]:
    """``nn_mse``: the mean of ``(ℓ − y_{i*})²``, the squared distance to the 1-NN predictor; the loss is half of
    it; each with its standard error over the prompts (``nn_mse_se``, ``test_loss_se``: ``mean_and_se``)."""
    _, ell = forward(W, x, Y)
    squared = ((ell - target) ** 2)[:, 0]
    return {**mean_and_se("nn_mse", squared), **mean_and_se("test_loss", 0.5 * squared)}


def evaluate_binary(
    saved_steps: np.ndarray, weights: np.ndarray, sets: dict[str, dict[str, np.ndarray]], d: int
) -> pd.DataFrame:
    """One row per (saved step, prompt set): the metrics (float64) and the parameter diagnostics of docs/method.md §5."""
    arrays = {name: binary_arrays(data) for name, data in sets.items()}
    rows = []
    for step, W_np in zip(saved_steps, weights):
        W = np.asarray(W_np, np.float64)
        params = diagnostics(W_np, d, 1)
        for name, (x, Y, target) in arrays.items():
            rows.append({"step": int(step), "test_set": name, **binary_metrics(W, x, Y, target), **params})
    return pd.DataFrame(rows)
