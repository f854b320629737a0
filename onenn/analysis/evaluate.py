"""The metrics of docs/method.md §5 for every saved ``W`` of a run, on a test set."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from onenn.family import diagnostics
from onenn.losses import Loss
from onenn.model import forward, predict, simplex_code


def prompt_metrics(
    W: torch.Tensor, x: torch.Tensor, classes: torch.Tensor, nn: torch.Tensor, K: int, loss_fn: Loss
) -> dict[str, float]:
    """Mean logit error ``‖ℓ − u_{c_{i*}}‖²``, argmax accuracy against the 1-NN class, and the loss
    (``onenn.analysis.tables.METRICS``)."""
    codes = simplex_code(K, dtype=x.dtype)
    rows = torch.arange(len(nn))
    target_class = classes[rows, nn]
    _, ell = forward(W, x, codes[classes])
    loss, _ = loss_fn(ell, target_class, codes[target_class])
    return {
        "logit_error": mean(((ell - codes[target_class]) ** 2).sum(-1)),
        "accuracy": mean((predict(ell) == target_class).double()),
        "test_loss": mean(loss),
    }


def mean(values: torch.Tensor) -> float:
    """The mean in numpy: torch splits long reductions across threads, so its last bit would depend on the
    number of threads; numpy's pairwise sum does not."""
    return float(np.mean(values.cpu().numpy()))


def evaluate_run(
    steps: np.ndarray, weights: np.ndarray, test_sets: dict[str, dict[str, np.ndarray]], K: int, loss_fn: Loss
) -> pd.DataFrame:
    """One row per (saved step, test set): the prompt metrics and the parameter diagnostics, in float64."""
    d = next(iter(test_sets.values()))["x"].shape[-1]
    tensors = {
        name: (
            torch.from_numpy(t["x"]).double(),
            torch.from_numpy(t["classes"]).long(),
            torch.from_numpy(t["nn"]).long(),
        )
        for name, t in test_sets.items()
    }
    rows = []
    for step, W_np in zip(steps, weights):
        W = torch.from_numpy(np.ascontiguousarray(W_np)).double()
        params = diagnostics(W_np, d, K)
        for name, (x, classes, nn) in tensors.items():
            rows.append(
                {"step": int(step), "test_set": name, **prompt_metrics(W, x, classes, nn, K, loss_fn), **params}
            )
    return pd.DataFrame(rows)
