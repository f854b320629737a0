"""The autograd baseline: training written the way a PyTorch user would write it. It forms the whole
attention ``H·softmax(HᵀWH)`` of docs/method.md §1, calls ``loss.backward()`` and steps ``torch.optim.SGD``, on the
same minibatches as the engine (``onenn.training.train.sample_batch``, same seeds). The benchmark times it against
the engine, and a test checks that both give the same weights."""

from __future__ import annotations

import numpy as np
import torch

from onenn.init import initial_weights
from onenn.losses import Loss
from onenn.model import embed, simplex_code
from onenn.prompts import nearest_neighbour
from onenn.steps import log_spaced_steps
from onenn.training.train import DTYPES, TrainSettings, resolve_device, sample_batch


class FullAttention(torch.nn.Module):
    """One softmax attention layer with the value matrix frozen to the identity; its output is the label
    block of the query column."""

    def __init__(self, W0: torch.Tensor, d: int, K: int) -> None:
        super().__init__()
        self.W = torch.nn.Parameter(W0.clone())
        self.labels = slice(d, d + K)

    def forward(self, H: torch.Tensor) -> torch.Tensor:
        """``H`` (B, D, N+1), tokens as columns -> ``ℓ`` (B, K)."""
        scores = H.transpose(1, 2) @ self.W @ H  # HᵀWH: (B, N+1, N+1)
        attention = torch.softmax(scores, dim=1)  # over each column
        return (H @ attention)[:, self.labels, -1]


class Baseline:
    """One run of autograd SGD, with the start and the minibatches of ``onenn.training.train.train``."""

    def __init__(self, settings: TrainSettings) -> None:
        s = self.settings = settings
        self.device, self.dtype = resolve_device(s.device), DTYPES[s.dtype]
        init_gen = torch.Generator().manual_seed(s.seed)
        W0 = initial_weights(s.d, s.K, s.sigma, s.epsilon, s.noise_blocks, init_gen, dtype=self.dtype)
        self.model = FullAttention(W0.to(self.device), s.d, s.K)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=s.lr)
        self.loss_fn = Loss(s.loss, s.c)
        self.codes = simplex_code(s.K, dtype=self.dtype, device=self.device)
        self.generator = torch.Generator(device=self.device).manual_seed(s.seed + 1)

    def step(self) -> torch.Tensor:
        """One SGD step on a fresh minibatch; return its loss."""
        s = self.settings
        x, classes = sample_batch(s.batch, s.N, s.d, s.K, self.generator, dtype=self.dtype, device=self.device)
        H = embed(x, self.codes[classes]).transpose(1, 2)  # (B, D, N+1)
        target_class = classes.gather(1, nearest_neighbour(x)[:, None])[:, 0]
        loss = self.loss_fn(self.model(H), target_class, self.codes[target_class])[0].mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()


def train_baseline(settings: TrainSettings) -> dict[str, np.ndarray]:
    """Like ``onenn.training.train.train``: the saved weights ``W`` (S, D, D) at ``steps`` (S,) and the minibatch loss
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
    return {"steps": saved_steps, "W": np.stack(saved), "minibatch_loss": minibatch_loss}
