"""The binary setting (docs/method.md §3) and the binary paper's experiment (docs/method.md §7): SGD on a fixed training set.

The model is ``onenn.model`` with label width ``m = 1``: ``D = d + 2``, ``h_j = [x_j; y_j; 0]``, the query
``[x_{N+1}; 0; 1]``, the scalar output ``ℓ = Σ_{j<=N} q_j y_j`` and the loss ``½(ℓ − y_{i*})²``. A prompt set is
``x`` (n, N+1, d) with the query last, scalar labels ``y`` (n, N) and ``nn`` (n,) the index ``i*``.

The binary paper's experiment (its section 5): a *fixed* training set of ``train_size`` prompts, ``epochs``
passes over it in minibatches of ``batch`` (reshuffled every epoch; the last minibatch of an epoch is the
remainder), learning rate ``lr``, from a random Gaussian ``W0 = diag(0, −σ) + ε·G`` (with ``σ = 0`` the
plain Gaussian ``ε·G``). Evaluation: the loss on the whole training set, and the mean squared distance
``(ℓ − y_{i*})²`` between the model and the 1-NN predictor on fresh uniform prompts and on the separated set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from onenn.gradient import weight_gradient
from onenn.init import initial_weights
from onenn.model import forward
from onenn.pipeline.settings import Settings
from onenn.steps import log_spaced_steps
from onenn.training.train import DTYPES, check_finite

# --------------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BinarySettings(Settings):
    """Everything one binary training run depends on. ``W0 = diag(0, −sigma) + epsilon·G``."""

    WHAT = "binary training settings"

    d: int = 8
    N: int = 16
    sigma: float = 0.0
    epsilon: float = 1.0
    lr: float = 0.1
    batch: int = 128
    epochs: int = 2000
    train_size: int = 10_000
    labels: str = "gaussian"
    n_eval: int = 48
    seed: int = 0
    dtype: str = "float32"

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.train_size / self.batch)

    @property
    def steps(self) -> int:
        return self.epochs * self.steps_per_epoch


def _tensors(data: dict[str, np.ndarray], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``x`` (n, N+1, d), labels as width-1 vectors ``Y`` (n, N, 1) and the 1-NN targets ``y_{i*}`` (n, 1)."""
    x = torch.from_numpy(np.ascontiguousarray(data["x"])).to(dtype)
    y = torch.from_numpy(np.ascontiguousarray(data["y"])).to(dtype)
    nn = torch.from_numpy(data["nn"]).long()
    return x, y[:, :, None], y[torch.arange(len(nn)), nn][:, None]


def train_binary(s: BinarySettings, train_set: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """SGD over the fixed training set, reshuffled every epoch. Returns the saved weights ``W`` (S, D, D) at
    ``steps`` (S,) and the minibatch loss of every step."""
    if train_set["x"].shape != (s.train_size, s.N + 1, s.d):
        raise ValueError(
            f"training set has prompts of shape {train_set['x'].shape}, expected ({s.train_size}, {s.N + 1}, {s.d})"
        )
    dtype = DTYPES[s.dtype]
    x_all, Y_all, target_all = _tensors(train_set, dtype)
    W = initial_weights(s.d, 1, s.sigma, s.epsilon, "all", torch.Generator().manual_seed(s.seed), dtype=dtype)
    order_gen = torch.Generator().manual_seed(s.seed + 1)
    saved_steps = log_spaced_steps(s.steps, s.n_eval, refine=True)
    saved = torch.empty(len(saved_steps), *W.shape, dtype=dtype)
    minibatch_loss = torch.empty(s.steps, dtype=dtype)
    step, k = 0, 0
    for _ in range(s.epochs):
        perm = torch.randperm(s.train_size, generator=order_gen)
        x_epoch, Y_epoch, target_epoch = x_all[perm], Y_all[perm], target_all[perm]  # contiguous slices below
        for lo in range(0, s.train_size, s.batch):
            if step == saved_steps[k]:
                saved[k] = W
                k += 1
            x, Y, target = x_epoch[lo : lo + s.batch], Y_epoch[lo : lo + s.batch], target_epoch[lo : lo + s.batch]
            q, ell = forward(W, x, Y)
            residual = ell - target  # (B, 1): dloss/dℓ of ½(ℓ − y_{i*})²
            minibatch_loss[step] = 0.5 * (residual**2).mean()
            W -= s.lr * weight_gradient(x, Y, q, ell, residual)
            step += 1
    saved[k] = W  # the last saved step is s.steps
    W_saved, losses = saved.double().numpy(), minibatch_loss.double().numpy()
    check_finite(W_saved, losses, saved_steps)
    return {"steps": saved_steps, "W": W_saved, "minibatch_loss": losses}
