"""The autograd baseline: training written the way a PyTorch user would write it. It forms the whole
attention ``H·softmax(HᵀWH)`` of docs/method.md §1, calls ``loss.backward()`` and steps ``torch.optim.SGD``, on the
same minibatches as the engine (``onenn.training.run_setup.sample_batch``, same seeds). The benchmark times it against
the engine, and a test checks that both give the same weights.

Also the binary experiment's reference (``train_binary_reference``): its SGD written with the readable model and
gradient (``onenn.maths.model``, ``onenn.maths.gradient``), one minibatch at a time, which the engine-based
``onenn.training.binary.train_binary`` is held to."""

from __future__ import annotations

import numpy as np
import torch

from onenn.maths.gradient import weight_gradient
from onenn.maths.init import initial_weights
from onenn.maths.losses import Loss
from onenn.maths.model import embed, forward, simplex_code
from onenn.maths.prompts import nearest_neighbour
from onenn.maths.steps import log_spaced_steps
from onenn.maths.stream import permutation, stream_key
from onenn.training.binary import BinarySettings, binary_tensors
from onenn.training.run_setup import TrainSettings, resolve_device, sample_batch, torch_dtype
from onenn.training.train import check_finite


class FullAttention(torch.nn.Module):
    """One softmax attention layer with the value matrix frozen to the identity; its output is the label
    block of the query column, of label width ``m``."""

    def __init__(self, W0: torch.Tensor, d: int, m: int) -> None:
        super().__init__()
        self.W = torch.nn.Parameter(W0.clone())
        self.labels = slice(d, d + m)

    def forward(self, H: torch.Tensor) -> torch.Tensor:
        """``H`` (B, D, N+1), tokens as columns -> ``ℓ`` (B, m)."""
        scores = H.transpose(1, 2) @ self.W @ H  # HᵀWH: (B, N+1, N+1)
        attention = torch.softmax(scores, dim=1)  # over each column
        return (H @ attention)[:, self.labels, -1]


class Baseline:
    """One run of autograd SGD, with the start and the minibatches of ``onenn.training.train.train``."""

    def __init__(self, settings: TrainSettings) -> None:
        s = self.settings = settings
        self.device, self.dtype = resolve_device(s.device), torch_dtype(s.dtype)
        W0 = initial_weights(s.d, s.K, s.sigma, s.epsilon, s.noise_blocks, s.seed, dtype=self.dtype)
        self.model = FullAttention(W0.to(self.device), s.d, s.K)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=s.lr)
        self.loss_fn = Loss(s.loss, s.c)
        self.codes = simplex_code(s.K, dtype=self.dtype, device=self.device)
        self.key, self.step_number = stream_key(s.seed, "minibatches"), 0

    def step(self) -> torch.Tensor:
        """One SGD step on a fresh minibatch; return its loss."""
        s = self.settings
        x, classes = sample_batch(
            s.batch, s.N, s.d, s.K, self.key, self.step_number, dtype=self.dtype, device=self.device
        )
        self.step_number += 1
        H = embed(x, self.codes[classes]).transpose(1, 2)  # (B, D, N+1)
        target_class = classes.gather(1, nearest_neighbour(x)[:, None])[:, 0]
        loss = self.loss_fn(self.model(H), target_class, self.codes[target_class])[0].mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()


def train_baseline(settings: TrainSettings) -> dict[str, np.ndarray]:
    """Like ``onenn.training.train.train``: the saved weights ``W`` (S, D, D) at ``saved_steps`` (S,) and the minibatch loss
    of every step."""
    run = Baseline(settings)
    saved_steps = log_spaced_steps(settings.steps, settings.n_eval, refine=True)
    saved, losses = [], []
    for step in range(settings.steps + 1):
        if step in saved_steps:
            saved.append(run.model.W.detach().double().cpu().numpy().copy())
        if step < settings.steps:
            losses.append(run.step())
    minibatch_loss = torch.stack(losses).double().cpu().numpy()
    return {"saved_steps": saved_steps, "W": np.stack(saved), "minibatch_loss": minibatch_loss}


class BinaryReference:
    """The binary experiment's SGD with the readable model and gradient, on (B, N+1, d) prompts: the same start,
    permutations and minibatches as ``onenn.training.binary.FixedSetSGD``."""

    def __init__(self, s: BinarySettings, train_set: dict[str, np.ndarray]) -> None:
        self.settings, dtype = s, torch_dtype(s.dtype)
        self.x, self.Y, self.target = binary_tensors(train_set, dtype)
        self.W = initial_weights(s.d, 1, s.sigma, s.epsilon, "all", s.seed, dtype=dtype)
        self.order_key = stream_key(s.seed, "minibatch_order")
        self.step, self.epochs_done = 0, 0
        self.saved: dict[int, torch.Tensor] = {}  # step -> W before it, for the steps in ``save_at``

    def epoch(self, save_at: frozenset[int] = frozenset()) -> list[torch.Tensor]:
        """One epoch: a new permutation, then one SGD step per minibatch; return the minibatch losses."""
        s, W = self.settings, self.W
        perm = torch.from_numpy(permutation(self.order_key, s.train_size, self.epochs_done))
        self.epochs_done += 1
        x_epoch, Y_epoch, target_epoch = self.x[perm], self.Y[perm], self.target[perm]  # contiguous slices below
        losses = []
        for lo in range(0, s.train_size, s.batch):
            if self.step in save_at:
                self.saved[self.step] = W.clone()
            x, Y, target = x_epoch[lo : lo + s.batch], Y_epoch[lo : lo + s.batch], target_epoch[lo : lo + s.batch]
            q, ell = forward(W, x, Y)
            residual = ell - target  # (B, 1): dloss/dℓ of ½(ℓ − y_{i*})²
            losses.append(0.5 * (residual**2).mean())
            W -= s.lr * weight_gradient(x, Y, q, ell, residual)
            self.step += 1
        return losses


def train_binary_reference(s: BinarySettings, train_set: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Like ``onenn.training.binary.train_binary``: the saved weights ``W`` (S, D, D) at ``saved_steps`` (S,) and the
    minibatch loss of every step."""
    run = BinaryReference(s, train_set)
    saved_steps = log_spaced_steps(s.steps, s.n_eval, refine=True)
    save_at = frozenset(int(t) for t in saved_steps)
    losses = [loss for _ in range(s.epochs) for loss in run.epoch(save_at)]
    run.saved[run.step] = run.W.clone()
    W_saved = torch.stack([run.saved[int(t)] for t in saved_steps]).double().numpy()
    minibatch_loss = torch.stack(losses).double().numpy()
    check_finite(W_saved, minibatch_loss, saved_steps)
    return {"saved_steps": saved_steps, "W": W_saved, "minibatch_loss": minibatch_loss}
