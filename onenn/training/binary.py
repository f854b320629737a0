"""The binary paper's experiment (docs/method.md §3.3, §7.1): SGD on a fixed training set with scalar labels
(``D = d + 2``), reshuffled every epoch, on the CPU engine with a ``FixedSet`` source."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from onenn.base.settings import Settings
from onenn.maths.init import initial_weights
from onenn.maths.losses import Loss
from onenn.maths.stream import stream_key
from onenn.training.cpu import Engine, FixedSet, run_pieces
from onenn.training.train import recorded_run

if TYPE_CHECKING:
    from onenn.base.progress import Progress


@dataclass(frozen=True)
class BinarySettings(Settings, schema="binary"):
    """Everything one binary training run depends on. ``W0 = diag(0, −sigma) + epsilon·G``."""

    WHAT = "binary training settings"

    d: int
    N: int
    sigma: float
    epsilon: float
    lr: float
    batch: int
    epochs: int
    train_size: int
    labels: str
    n_eval: int
    seed: int = 0
    dtype: str

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.train_size / self.batch)

    @property
    def steps(self) -> int:
        return self.epochs * self.steps_per_epoch


class FixedSetSGD:
    """SGD over a fixed set: an engine of ``batch`` prompts and one of an epoch's remainder, on one ``W`` and source."""

    def __init__(self, s: BinarySettings, train_set: dict[str, np.ndarray]) -> None:
        if train_set["x"].shape != (s.train_size, s.N + 1, s.d):
            raise ValueError(
                f"training set has prompts of shape {train_set['x'].shape}, expected ({s.train_size}, {s.N + 1}, {s.d})"
            )
        self.W = initial_weights(s.d, 1, s.sigma, s.epsilon, "all", s.seed, dtype=s.dtype)
        # the set's embeddings H (n, D, N+1) and 1-NN targets y_{i*} (n, 1)
        x, y, nn = train_set["x"].astype(s.dtype), train_set["y"].astype(s.dtype), train_set["nn"].astype(np.int64)
        H = np.zeros((s.train_size, s.d + 2, s.N + 1), dtype=s.dtype)
        H[:, : s.d] = x.transpose(0, 2, 1)
        H[:, s.d, :-1] = y  # the query's label slot stays 0
        H[:, s.d + 1, -1] = 1.0  # the query's indicator
        source = FixedSet(H, y[np.arange(s.train_size), nn][:, None], stream_key(s.seed, "minibatch_order"))
        full, remainder = divmod(s.train_size, s.batch)
        common = {"d": s.d, "N": s.N, "m": 1, "lr": s.lr, "loss": Loss("square"), "source": source}
        #: (engine, its steps per epoch)
        self.engines = [(Engine(self.W, batch=s.batch, **common), full)] if full else []
        if remainder:
            self.engines.append((Engine(self.W, batch=remainder, block=1, **common), 1))
        self.steps_per_epoch = s.steps_per_epoch

    def run(
        self, steps: int, saved_steps: list[int] | None = None, progress: Progress | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``steps`` (whole epochs) from the current ``W``, as ``Engine.run`` (``progress`` after each engine's share)."""
        per_epoch = self.steps_per_epoch
        shares = list(itertools.accumulate(n for _, n in self.engines))  # where each engine's share ends, in an epoch

        def share_end(t: int) -> int:
            return t - t % per_epoch + next(end for end in shares if end > t % per_epoch)

        def advance(t: int, stop: int, losses: np.ndarray) -> bool:
            engine = next(engine for (engine, _), end in zip(self.engines, shares) if t % per_epoch < end)
            losses[t:stop] = engine.run(stop - t)[1]
            return stop == share_end(t)

        return run_pieces(self.W, steps, saved_steps, share_end, advance, progress)


def train_binary(
    s: BinarySettings, train_set: dict[str, np.ndarray], progress: Progress | None = None
) -> dict[str, np.ndarray]:
    """``FixedSetSGD``'s run, recorded as ``train``'s (``diverged_step`` -1: a divergence raises ``Diverged``)."""
    return recorded_run(FixedSetSGD(s, train_set), s.steps, s.n_eval, progress, "error")
