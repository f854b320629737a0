"""The CPU engine (docs/method.md §4.2): SGD on numpy buffers through numba's loops (``cpu_steps``, ``cpu_stream``).
A block of minibatches is ``H`` (S, D, N+1, B), prompt innermost, filled by a source: ``FreshDraws`` or ``FixedSet``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from onenn.maths.losses import Loss
from onenn.maths.stream import BOUNDS, check_minibatch
from onenn.training import cpu_steps, cpu_stream

if TYPE_CHECKING:
    from onenn.base.progress import Progress

#: steps whose W-independent work is done together: a speed knob only, results do not depend on it
BLOCK = 16


def run_pieces(W, steps: int, saved_steps: list[int] | None, piece_end, advance, progress, new=None) -> tuple:
    """Every engine's run: ``advance(t, stop, losses)`` runs steps ``t..stop-1`` (a piece ends at ``piece_end(t)``, a
    saved step or ``steps``) and says whether to call ``progress``; ``new(*shape)``: the buffers (numpy by default)."""
    saved_steps = list(saved_steps or [])
    if saved_steps != sorted(saved_steps) or not all(0 <= t <= steps for t in saved_steps):
        raise ValueError(f"saved_steps must be sorted and lie in 0..{steps}; got {saved_steps}")
    new = new or (lambda *shape: np.zeros(shape, W.dtype))
    saved, losses = new(len(saved_steps), *W.shape), new(steps)
    k, t = 0, 0
    while True:
        while k < len(saved_steps) and saved_steps[k] == t:
            saved[k] = W
            k += 1
        if t == steps:
            return saved, losses
        stop = min(steps, piece_end(t), *saved_steps[k : k + 1])
        if advance(t, stop, losses) and progress is not None:
            progress(stop, steps, losses[stop - 1])
        t = stop


class Engine:
    """SGD for one run; ``run`` updates ``W`` (D, D) in place. ``m``: the label width (``K``, or 1 for scalar labels);
    ``source`` (``FreshDraws``, ``FixedSet``) ``attach``es to the engine and ``prepare``s its block's minibatches."""

    def __init__(
        self,
        W: np.ndarray,
        *,
        d: int,
        N: int,
        m: int,
        batch: int,
        lr: float,
        loss: Loss,
        source: FreshDraws | FixedSet,
        block: int = BLOCK,
    ) -> None:
        D, T, B, S = d + m + 1, N + 1, batch, block
        if not isinstance(W, np.ndarray):
            raise TypeError(f"the CPU engine trains a numpy array W; got {type(W).__name__}")
        if W.shape != (D, D):
            raise ValueError(f"W must be (D, D) = ({D}, {D}) for d={d}, m={m}; got {tuple(W.shape)}")
        if not W.flags.c_contiguous or not W.flags.writeable:
            raise ValueError("the CPU engine updates W in place: W must be contiguous and writeable")
        self.W, self.d, self.N, self.m, self.B, self.S, self.loss = W, d, N, m, batch, block, loss
        self.loss_code = (cpu_steps.loss_branch(loss.name), loss.c)  # raises if the kernels lack the loss
        with np.errstate(over="ignore"):  # lr in the training precision, as in `W -= lr * grad` (1e39: inf)
            self.lr_over_batch = W.dtype.type(float(np.asarray(lr).astype(W.dtype)) / B)
        zeros = lambda *shape: np.zeros(shape, W.dtype)
        self.H = zeros(S, D, T, B)  # the block's embeddings
        self.H[:, -1, -1, :] = 1.0  # the query's indicator coordinate (its label slot stays 0)
        self.U, self.G, self.L = zeros(S, m, B), zeros(S, m, B), zeros(S)  # u_{c_i*}, ∂loss/∂ℓ, minibatch losses
        self.target_class = np.zeros((S, B), np.int64)  # c_{i*}
        self.scratch = (zeros(D, B), zeros(T, B), zeros(T, B), zeros(D, B), zeros(B))  # v, s, a, r, norm
        self.source = source
        source.attach(self)

    def run(
        self, steps: int, saved_steps: list[int] | None = None, progress: Progress | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``steps`` SGD steps: ``W`` at each of ``saved_steps`` and every step's loss (``progress``: every block)."""
        return run_pieces(self.W, steps, saved_steps, lambda t: t - t % self.S + self.S, self.advance, progress)

    def advance(self, t: int, stop: int, losses: np.ndarray) -> bool:
        """Steps ``t..stop-1`` (``run_pieces``), the block prepared at its start; whether the block ended."""
        start = t - t % self.S
        if t == start:
            self.prepare_block(min(self.S, len(losses) - start))
        self.sgd_steps(t - start, stop - start)
        losses[t:stop] = self.L[t - start : stop - start]
        return stop == min(start + self.S, len(losses))

    def prepare_block(self, n: int) -> None:
        """The next ``n`` minibatches from the source."""
        if not 1 <= n <= self.S:
            raise ValueError(f"prepare_block: n must lie in 1..{self.S} (the engine's block); got {n}")
        self.source.prepare(self, n)

    def sgd_steps(self, first: int, last: int) -> None:
        """SGD steps on the prepared minibatches ``first..last-1`` (``cpu_steps.sgd_steps`` checks the range)."""
        arrays = (self.W, self.H, self.U, self.target_class, self.G, self.L)
        cpu_steps.sgd_steps(*arrays, first, last, self.lr_over_batch, *self.loss_code, *self.scratch)


class FreshDraws:
    """Fresh minibatches of Assumption 1 from the run's stream (key ``key``) from step ``first_step``, a step at a time
    (the results depend neither on the block nor on the run length). One source, one engine."""

    def __init__(self, key: int, first_step: int = 0) -> None:
        if not 0 <= key < 2**63:
            raise ValueError(f"key must lie in 0..2**63-1 (onenn.maths.stream.stream_key); got {key}")
        if not 0 <= first_step < BOUNDS["step"]:
            raise ValueError(f"first_step must lie in 0..{BOUNDS['step'] - 1}; got {first_step}")
        self.key, self.step = key, first_step
        self.engine: Engine | None = None

    def attach(self, engine: Engine) -> None:
        if self.engine is not None:
            raise ValueError("a FreshDraws source feeds one engine; make one per engine")
        e = engine
        check_minibatch(e.d, e.N, e.B)
        self.engine = engine
        dtype = e.W.dtype.type
        # the float32 draws land in H directly; a float64 engine's go through Z
        self.Z = None if dtype is np.float32 else np.zeros((e.S, e.d, e.N + 1, e.B), np.float32)
        self.C = np.zeros((e.S, e.N, e.B), np.int64)  # classes
        shift = dtype(1.0 / e.m)  # multiclass: the label width is the number of classes K
        self.codes = (dtype(1.0) - shift, -shift)  # u_c's entries, 1 - 1/K and -1/K
        self.kernel_scratch = tuple(np.zeros((2, e.B), dtype))

    def prepare(self, engine: Engine, n: int) -> None:
        """Draw ``n`` minibatches; inputs onto the sphere, the label codes and the 1-NN targets."""
        if self.step + n > BOUNDS["step"]:
            raise ValueError(
                f"the random stream's counter holds {BOUNDS['step']} steps; step {self.step + n - 1} asked"
            )
        e = engine
        cpu_stream.draw_block(e.H if self.Z is None else self.Z, self.C, self.key, self.step, n, e.m, e.d)
        self.step += n
        if self.Z is not None:
            e.H[:n, : e.d] = self.Z[:n]
        cpu_steps.prepare_fresh(e.H, self.C, e.U, e.target_class, n, *self.codes, *self.kernel_scratch)


class FixedSet:
    """A fixed set, embeddings ``H_set`` (n, D, N+1) and 1-NN targets ``U_set`` (n, m), in passes reshuffled by
    ``permutation(key, n, p)`` (square loss only); engines of several batch sizes may share it (docs/method.md §7.1)."""

    def __init__(self, H_set: np.ndarray, U_set: np.ndarray, key: int) -> None:
        self.H_set, self.U_set, self.key = np.ascontiguousarray(H_set), np.ascontiguousarray(U_set), key
        self.size = H_set.shape[0]
        if self.size > BOUNDS["prompt"]:
            raise ValueError(f"the random stream orders at most {BOUNDS['prompt']} prompts; the set has {self.size}")
        self.passes = 0  # the passes begun
        self.perm: np.ndarray | None = None  # the order of the pass under way
        self.position = self.size  # at the end of a pass: the next minibatch starts a new one

    def attach(self, engine: Engine) -> None:
        e = engine
        if e.loss.name != "square":
            raise ValueError(f"a FixedSet source has no classes: loss must be 'square'; got {e.loss.name!r}")
        D, T = e.d + e.m + 1, e.N + 1
        if self.H_set.shape[1:] != (D, T) or self.U_set.shape[1:] != (e.m,):
            raise ValueError(
                f"the set's embeddings {tuple(self.H_set.shape)} and targets {tuple(self.U_set.shape)} do not fit "
                f"the engine's (n, D, N+1) = (n, {D}, {T}) and (n, m) = (n, {e.m})"
            )
        if e.B > self.size:
            raise ValueError(f"minibatch {e.B} is larger than the set ({self.size} prompts)")

    def prepare(self, engine: Engine, n: int) -> None:
        """Gather the next ``n`` minibatches of ``engine.B`` prompts into the engine's block."""
        B = engine.B
        index = np.zeros(n * B, np.int64)
        i = 0
        while i < n:
            if self.position == self.size:
                self.perm = cpu_stream.permutation(self.key, self.size, self.passes)
                self.position, self.passes = 0, self.passes + 1
            left = min(n - i, (self.size - self.position) // B)  # the minibatches left in this pass
            if left == 0:
                raise ValueError(
                    f"a minibatch of {B} prompts would cross the end of a pass ({self.size - self.position} left)"
                )
            index[i * B : (i + left) * B] = self.perm[self.position : self.position + left * B]
            self.position += left * B
            i += left
        cpu_steps.gather_block(self.H_set, self.U_set, index, engine.H, engine.U, n)
