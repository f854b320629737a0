"""The metrics of docs/method.md §5 for every saved ``W`` of a run on its test sets, multiclass and binary: numpy,
float64, on the reference model ``onenn.maths.model`` (no torch), in its shapes."""

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from onenn.base.columns import se_column
from onenn.maths.family import diagnostics
from onenn.maths.losses import Loss, check_registered
from onenn.maths.model import forward, simplex_code


def mean_and_se(name: str, values: np.ndarray) -> dict[str, float]:
    """``{name: mean, name_se: sd / √n}`` over the prompts (sample sd, ddof 1; NaN for a single prompt)."""
    n = len(values)
    se = float(np.std(values, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return {name: float(np.mean(values)), se_column(name): se}


def class_arrays(data: dict[str, np.ndarray], K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A test set's ``x``, label codes ``Y`` (n, N, K), 1-NN class (n,) and its code (n, K), float64, made once."""
    codes = simplex_code(K)
    x = np.asarray(data["x"], np.float64)
    classes = np.asarray(data["classes"], np.int64)
    target_class = classes[np.arange(len(classes)), np.asarray(data["nn"], np.int64)]
    return x, codes[classes], target_class, codes[target_class]


def class_metrics(
    W: np.ndarray, x: np.ndarray, Y: np.ndarray, target_class: np.ndarray, y_target: np.ndarray, loss: str, c: float
) -> dict[str, float]:
    """Logit error ``‖ℓ − u_{c_{i*}}‖²``, argmax accuracy against the 1-NN class and the loss of ``W`` on a test set's
    ``class_arrays``, each with its standard error (numpy's pairwise sums: the last bit does not depend on threads)."""
    _, ell = forward(W, x, Y)
    return {
        **mean_and_se("logit_error", ((ell - y_target) ** 2).sum(-1)),
        **mean_and_se("accuracy", (ell.argmax(-1) == target_class).astype(np.float64)),
        **mean_and_se("test_loss", Loss(loss, c)(ell, target_class, y_target)[0]),
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
    check_registered(loss)
    d = next(iter(test_sets.values()))["x"].shape[-1]
    arrays = {name: class_arrays(data, K) for name, data in test_sets.items()}
    return metric_rows(saved_steps, weights, arrays, lambda W, *a: class_metrics(W, *a, loss, c), d, K)


def metric_rows(saved_steps: np.ndarray, weights: np.ndarray, arrays: dict, metrics: Callable, d: int, m: int):
    """One row per (saved step, set): ``metrics(W, *arrays[set])`` and the parameter diagnostics, in float64."""
    rows = []
    for step, W_np in zip(saved_steps, weights):
        W = np.asarray(W_np, np.float64)
        params = diagnostics(W_np, d, m)
        for name, prepared in arrays.items():
            rows.append({"step": int(step), "test_set": name, **metrics(W, *prepared), **params})
    return pd.DataFrame(rows)


def binary_arrays(data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A binary prompt set's ``x``, labels as width-1 vectors ``Y`` (n, N, 1) and 1-NN targets (n, 1), float64."""
    x = np.asarray(data["x"], np.float64)
    y = np.asarray(data["y"], np.float64)
    nn = np.asarray(data["nn"], np.int64)
    return x, y[:, :, None], y[np.arange(len(nn)), nn][:, None]


def binary_metrics(W: np.ndarray, x: np.ndarray, Y: np.ndarray, target: np.ndarray) -> dict[str, float]:
    """``nn_mse``, the mean ``(ℓ − y_{i*})²`` (squared distance to the 1-NN predictor), and the loss, half of it."""
    _, ell = forward(W, x, Y)
    squared = ((ell - target) ** 2)[:, 0]
    return {**mean_and_se("nn_mse", squared), **mean_and_se("test_loss", 0.5 * squared)}


def evaluate_binary(
    saved_steps: np.ndarray, weights: np.ndarray, sets: dict[str, dict[str, np.ndarray]], d: int
) -> pd.DataFrame:
    """One row per (saved step, prompt set): the binary metrics and the parameter diagnostics."""
    arrays = {name: binary_arrays(data) for name, data in sets.items()}
    return metric_rows(saved_steps, weights, arrays, binary_metrics, d, 1)
