"""The binary setting (docs/method.md §3) and the binary paper's experiment (docs/method.md §7): SGD on a fixed training set.

The model is ``onenn.maths.model`` with label width ``m = 1``: ``D = d + 2``, ``h_j = [x_j; y_j; 0]``, the query
``[x_{N+1}; 0; 1]``, the scalar output ``ℓ = Σ_{j<=N} q_j y_j`` and the loss ``½(ℓ − y_{i*})²``. A prompt set is
``x`` (n, N+1, d) with the query last, scalar labels ``y`` (n, N) and ``nn`` (n,) the index ``i*``.

The binary paper's experiment (its section 5): a *fixed* training set of ``train_size`` prompts, ``epochs``
passes over it in minibatches of ``batch`` (reshuffled every epoch; the last minibatch of an epoch is the
remainder), learning rate ``lr``, from a random Gaussian ``W0 = diag(0, −σ) + ε·G`` (with ``σ = 0`` the
plain Gaussian ``ε·G``). Evaluation: the loss on the whole training set, and the mean squared distance
``(ℓ − y_{i*})²`` between the model and the 1-NN predictor on fresh uniform prompts and on the separated set.

Training runs on the multiclass runs' engine (``onenn.training.engine``) with label width 1, its minibatches
from a ``FixedSet`` source; the readable loop over ``onenn.maths.model`` and ``onenn.maths.gradient`` it replaced is kept as
the reference the tests hold it to, ``onenn.training.baseline.train_binary_reference``. ``train_binary`` runs the
engine's compiled kernels on numpy arrays, and imports no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from onenn.base.settings import Settings
from onenn.maths.init import PRECISIONS, initial_array, initial_weights
from onenn.maths.losses import Loss
from onenn.maths.steps import log_spaced_steps
from onenn.maths.stream import stream_key
from onenn.training.engine import Engine, float64_array, zeros
from onenn.training.run_setup import torch_dtype
from onenn.training.sources import FixedSet
from onenn.training.train import check_finite

if TYPE_CHECKING:
    import torch

    from onenn.base.progress import Progress
    from onenn.training.engine import Array

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


def binary_tensors(data: dict[str, np.ndarray], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``x`` (n, N+1, d), labels as width-1 vectors ``Y`` (n, N, 1) and the 1-NN targets ``y_{i*}`` (n, 1)."""
    import torch

    x = torch.from_numpy(np.ascontiguousarray(data["x"])).to(dtype)
    y = torch.from_numpy(np.ascontiguousarray(data["y"])).to(dtype)
    nn = torch.from_numpy(data["nn"]).long()
    return x, y[:, :, None], y[torch.arange(len(nn)), nn][:, None]


def embedded_set(train_set: dict[str, np.ndarray], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """A prompt set as ``FixedSet`` takes it: the embeddings ``H`` (n, D, N+1), tokens as columns, and the 1-NN
    targets ``y_{i*}`` (n, 1)."""
    from onenn.maths.model import embed

    x, Y, target = binary_tensors(train_set, dtype)
    return embed(x, Y).transpose(1, 2).contiguous(), target


def embedded_arrays(train_set: dict[str, np.ndarray], dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """``embedded_set`` in numpy, in precision ``dtype`` (``float32``, ``float64``): the embeddings ``H``
    (n, D, N+1), columns ``h_j = [x_j; y_j; 0]`` and ``h_{N+1} = [x_{N+1}; 0; 1]`` (``onenn.maths.model.embed``), and the
    1-NN targets ``y_{i*}`` (n, 1)."""
    if dtype not in PRECISIONS:
        raise ValueError(f"dtype must be one of {', '.join(PRECISIONS)}; got {dtype!r}")
    x, y, nn = train_set["x"].astype(dtype), train_set["y"].astype(dtype), train_set["nn"].astype(np.int64)
    n, T, d = x.shape
    H = np.zeros((n, d + 2, T), dtype=dtype)
    H[:, :d] = x.transpose(0, 2, 1)
    H[:, d, :-1] = y  # the query's label slot stays 0
    H[:, d + 1, -1] = 1.0  # the query's indicator
    return H, y[np.arange(n), nn][:, None]


class FixedSetSGD:
    """SGD over a fixed training set on the training engine (``onenn.training.engine``), reshuffled every epoch:
    an engine of ``batch`` prompts for the epoch's full minibatches and, when ``batch`` does not divide
    ``train_size``, a second engine of the remainder's size for its last one; both update the same ``W`` in
    place and take their minibatches from one ``FixedSet`` source. ``compiled``: as ``Engine``'s (by default the
    compiled kernels, on the CPU). ``numpy``: the compiled kernels on numpy arrays instead of torch tensors (the
    same numbers; ``W`` and what ``run`` returns are numpy arrays), without importing torch."""

    def __init__(
        self, s: BinarySettings, train_set: dict[str, np.ndarray], *, compiled: bool | None = None, numpy: bool = False
    ) -> None:
        if train_set["x"].shape != (s.train_size, s.N + 1, s.d):
            raise ValueError(
                f"training set has prompts of shape {train_set['x'].shape}, expected ({s.train_size}, {s.N + 1}, {s.d})"
            )
        start = (s.d, 1, s.sigma, s.epsilon, "all", s.seed)
        if numpy:
            self.W = initial_array(*start, dtype=s.dtype)
            H_set, U_set = embedded_arrays(train_set, s.dtype)
        else:
            self.W = initial_weights(*start, dtype=torch_dtype(s.dtype))
            H_set, U_set = embedded_set(train_set, torch_dtype(s.dtype))
        source = FixedSet(H_set, U_set, stream_key(s.seed, "minibatch_order"))
        full, remainder = divmod(s.train_size, s.batch)
        common = {
            "d": s.d,
            "N": s.N,
            "m": 1,
            "lr": s.lr,
            "loss": Loss("square"),
            "source": source,
            "compiled": compiled,
        }
        #: (engine, its steps per epoch)
        self.engines = [(Engine(self.W, batch=s.batch, **common), full)] if full else []
        if remainder:
            self.engines.append((Engine(self.W, batch=remainder, block=1, **common), 1))
        self.steps_per_epoch = s.steps_per_epoch

    def run(
        self, epochs: int, saved_steps: list[int] | None = None, progress: Progress | None = None
    ) -> tuple[Array, Array]:
        """``epochs`` epochs from the current ``W``, as ``Engine.run``: ``W`` after each of ``saved_steps`` steps
        (sorted, in ``0..steps``): (S, D, D), and the minibatch loss of every step: (steps,). ``progress``: as
        ``Engine.run``'s, called after each engine's share of an epoch (its full minibatches, then the remainder)."""
        steps, W = epochs * self.steps_per_epoch, self.W
        saved_steps = list(saved_steps or [])
        if saved_steps != sorted(saved_steps) or not all(0 <= t <= steps for t in saved_steps):
            raise ValueError(f"saved_steps must be sorted and lie in 0..{steps}; got {saved_steps}")
        saved, losses = zeros(W, len(saved_steps), *W.shape), zeros(W, steps)
        step, k = 0, 0
        for _ in range(epochs):
            for engine, n in self.engines:
                inside = [t - step for t in saved_steps[k:] if t < step + n]
                saved_here, losses[step : step + n] = engine.run(n, inside)
                saved[k : k + len(inside)] = saved_here
                k, step = k + len(inside), step + n
                if progress is not None:
                    progress(step, steps, losses[step - 1])
        saved[k:] = W  # the saved steps equal to `steps`
        return saved, losses


def train_binary(
    s: BinarySettings, train_set: dict[str, np.ndarray], progress: Progress | None = None
) -> dict[str, np.ndarray]:
    """SGD over the fixed training set, reshuffled every epoch (``FixedSetSGD``). Returns the saved weights
    ``W`` (S, D, D) at ``saved_steps`` (S,) and the minibatch loss of every step. ``progress``: as ``train``'s
    (silent by default; it changes no number)."""
    saved_steps = log_spaced_steps(s.steps, s.n_eval, refine=True)
    saved, minibatch_loss = FixedSetSGD(s, train_set, numpy=True).run(s.epochs, saved_steps.tolist(), progress)
    W_saved, losses = float64_array(saved), float64_array(minibatch_loss)
    check_finite(W_saved, losses, saved_steps)
    return {"saved_steps": saved_steps, "W": W_saved, "minibatch_loss": losses}
