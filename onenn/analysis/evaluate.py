"""The metrics of docs/method.md §5 for every saved ``W`` of a run, on a test set, multiclass and binary.

numpy only, in float64: the model and the loss values are the numpy ones of ``onenn.maths.model_numpy``, so an
evaluation job never imports torch (docs/performance.md, per-job fixed cost).

Prompts are token rows as in ``onenn.maths.model``: ``x`` (B, N+1, d) with the query last, ``Y`` (B, N, m) the label
vectors of the context, ``D = d + m + 1``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from onenn.base.columns import se_column
from onenn.maths.family import diagnostics
from onenn.maths.model_numpy import check_loss, forward, loss_values, simplex_code

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
