"""The training engine's minibatch sources (docs/method.md §4): where a run's minibatches come from, the one thing
that differs between runs. A source fills the engine's block (``onenn.training.engine.Engine``, ``BLOCK`` steps) with
the next minibatches and everything in them that does not depend on ``W``:

- ``FreshDraws``, fresh prompts of Assumption 1 (the multiclass runs): the draws, normalising the inputs, the label
  codes and the 1-NN targets;
- ``FixedSet``, the next minibatches of a fixed, pre-embedded prompt set in reshuffled passes (the binary
  experiment, label width 1).

The random numbers are drawn one step at a time from the counter-based stream of docs/method.md §4.4
(``draw_step``), so the results depend neither on the block size nor on the run length. On the CPU the sources
prepare their block through the compiled loops of ``onenn.training.kernels`` (``prepare_fresh``,
``gather_block``) when the engine runs its steps there; otherwise through the torch operations below, the
definition the kernels are tested against. On CUDA each step's draws are made on the CPU and copied to the GPU.
A source's buffers are of the kind of the engine's ``W`` (``onenn.training.engine``): torch is imported only where
a torch operation runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from onenn.maths.stream import BOUNDS, check_minibatch
from onenn.training.engine import as_array, on_cpu, zeros

if TYPE_CHECKING:
    import torch

    from onenn.training.engine import Array, Engine


def draw_step(z: torch.Tensor, classes: torch.Tensor, K: int, key: int, step: int) -> None:
    """Step ``step``'s random numbers of the run with the minibatch key ``key`` (docs/method.md §4.4), in place:
    standard Gaussians ``z`` (d, N+1, B) float32, then classes ``classes`` (N, B) int64 uniform on ``0..K-1``.

    This defines the training stream: input ``x_j`` of prompt ``b`` is ``z[:, j, b] / ‖z[:, j, b]‖`` (uniform
    on the sphere) and its class is ``classes[j, b]``; each number is the stream's at ``(step, b, j, k)``
    (``onenn.maths.stream.minibatch``), drawn on the CPU by the compiled implementation ``onenn.training.philox`` (the
    same bits for every CPU engine) and copied to ``z``'s device. The draws are float32 for every training dtype,
    so a float64 run sees the points of the float32 run with the same seed, normalised in float64.
    """
    import torch

    from onenn.training import philox  # numba: imported where the draws are made

    if z.device.type == "cpu" and classes.device.type == "cpu":
        philox.draw_minibatch(z.numpy(), classes.numpy(), key, step, K)
        return
    z_cpu, classes_cpu = torch.empty(z.shape, dtype=torch.float32), torch.empty(classes.shape, dtype=torch.long)
    philox.draw_minibatch(z_cpu.numpy(), classes_cpu.numpy(), key, step, K)
    z.copy_(z_cpu)
    classes.copy_(classes_cpu)


class FreshDraws:
    """Fresh minibatches of Assumption 1 from the run's random stream, minibatch key ``key``, drawn one step at a
    time (``draw_step``): inputs on the sphere, the label codes ``u_c`` and the 1-NN targets ``u_{c_{i*}}``. The
    next minibatch is step ``step`` of the stream (``first_step`` at the start), so a run continued from a saved
    step with ``first_step`` set draws what the whole run would have. Its buffers are the engine's: one source
    feeds one engine."""

    def __init__(self, key: int, first_step: int = 0) -> None:
        if not 0 <= key < 2**63:
            raise ValueError(f"key must lie in 0..2**63-1 (onenn.maths.stream.stream_key); got {key}")
        if not 0 <= first_step < BOUNDS["step"]:
            raise ValueError(f"first_step must lie in 0..{BOUNDS['step'] - 1}; got {first_step}")
        self.key, self.step = key, first_step
        self.engine: Engine | None = None

    def attach(self, engine: Engine) -> None:
        """Allocate the block's draws and scratch for ``engine``."""
        if self.engine is not None:
            raise ValueError("a FreshDraws source feeds one engine; make one per engine")
        e, d, N, B, S = engine, engine.d, engine.N, engine.B, engine.S
        K = engine.m  # fresh draws are multiclass: the label width is the number of classes
        T, W = N + 1, engine.W
        check_minibatch(d, N, B)
        self.engine = engine
        self.X = e.H[:, :d]  # inputs: (S, d, T, B)
        self.Y = e.H[:, d : d + K, :N]  # label codes of the context: (S, K, N, B)
        float32 = str(W.dtype).removeprefix("torch.") == "float32"  # float32 draws land in H; others go through Z
        self.Z = self.X if float32 else zeros(W, S, d, T, B, kind="float32")
        self.C = zeros(W, S, N, B, kind="index")  # classes
        if on_cpu(W):  # the draws' numpy views (no copies), as the compiled draw writes them
            self.draw_arrays = (as_array(e.H if float32 else self.Z), as_array(self.C))  # contiguous: vector loops
        else:
            self.draw_views = [(self.Z[i], self.C[i]) for i in range(S)]
        if not e.compiled:
            self._attach_torch_scratch(e)
            return
        self.kernel_arrays = tuple(map(as_array, (e.H, self.C, e.U, e.target_class)))
        dtype = as_array(W).dtype.type
        one, shift = dtype(1.0), dtype(1.0 / K)
        self.codes = (one - shift, -shift)  # u_c's entries, rounded as the torch operations round them
        self.kernel_scratch = tuple(zeros(as_array(W), 2, B))

    def _attach_torch_scratch(self, e: Engine) -> None:
        """The scratch of the torch operations' preparation."""
        import torch

        d, N, B, S, K, dev = e.d, e.N, e.B, e.S, e.m, e.W.device
        index = {"dtype": torch.long, "device": dev}
        self.class_ids = torch.arange(K, **index)[:, None, None]  # 0..K-1: (K, 1, 1)
        self.offsets = torch.arange(S, **index)[:, None] * (N * B) + torch.arange(B, **index)  # C[s, 0, b]
        self.X_tmp = zeros(e.W, S, d, N + 1, B)
        self.sq_norm = zeros(e.W, S, 1, N + 1, B)
        self.inner = zeros(e.W, S, N, B)
        self.inner_max = zeros(e.W, S, B)
        self.nn = zeros(e.W, S, B, kind="index")

    def prepare(self, engine: Engine, n: int) -> None:
        """Draw ``n`` minibatches, then everything that does not depend on ``W``: inputs on the sphere, the
        label codes and the 1-NN targets."""
        K = engine.m  # the number of classes
        if self.step + n > BOUNDS["step"]:
            raise ValueError(
                f"the random stream's counter holds {BOUNDS['step']} steps; step {self.step + n - 1} asked"
            )
        if on_cpu(engine.W):
            from onenn.training.philox import draw_block

            draw_block(*self.draw_arrays, self.key, self.step, n, K, engine.d)
        else:
            for i, (z, classes) in enumerate(self.draw_views[:n]):
                draw_step(z, classes, K, self.key, self.step + i)
        self.step += n
        X = self.X[:n]
        if self.Z is not self.X:
            X[...] = self.Z[:n]
        if engine.compiled:
            engine.kernels.prepare_fresh(*self.kernel_arrays, n, *self.codes, *self.kernel_scratch)
            return
        import torch

        X_tmp, sq_norm = self.X_tmp[:n], self.sq_norm[:n]
        torch.sum(torch.mul(X, X, out=X_tmp), 1, keepdim=True, out=sq_norm)
        X.mul_(sq_norm.rsqrt_())
        # u_c = e_c − 1/K
        C, Y, U = self.C[:n], self.Y[:n], engine.U[:n]
        torch.eq(C[:, None], self.class_ids, out=Y)
        Y.sub_(1.0 / K)
        # 1-NN: the context point with the largest inner product with the query, as in onenn.maths.model
        # (torch.max returns the first maximiser like argmax, and is much faster over a middle axis)
        torch.sum(torch.mul(X[:, :, :-1], X[:, :, -1:], out=X_tmp[:, :, :-1]), 1, out=self.inner[:n])
        nn, target_class = self.nn[:n], engine.target_class[:n]
        torch.max(self.inner[:n], 1, out=(self.inner_max[:n], nn))
        torch.add(self.offsets[:n], nn, alpha=engine.B, out=nn)  # flat index of C[s, i*, b]
        torch.take(C, nn, out=target_class)
        torch.eq(target_class[:, None], self.class_ids[:, 0], out=U)
        U.sub_(1.0 / K)


class FixedSet:
    """A fixed set of prompts, embedded once, in passes reshuffled at the start of every pass: pass ``p`` takes the
    order ``perm = onenn.maths.stream.permutation(key, n, p)`` of the run's ``(seed, "minibatch_order")`` key, and its
    minibatch ``k`` holds the prompts ``perm[k·B : (k+1)·B]``. ``H_set``
    (n, D, N+1) holds the embeddings (the query last with its indicator 1) and ``U_set`` (n, m) the 1-NN
    targets; square loss only (no classes). Engines of different minibatch sizes can share one source, W and
    the pass: a minibatch must not cross the end of a pass (the caller runs the remainder minibatch on an
    engine of its size).

    A block is gathered prompt-major, rows of ``H_set``, then transposed into the engine's ``(D, N+1, B)``
    minibatches in one copy (gathering along the innermost axis directly costs twice as much); with the engine's
    compiled kernels, in one pass (``kernels.gather_block``)."""

    def __init__(self, H_set: Array, U_set: Array, key: int) -> None:
        self.H_set, self.U_set, self.key = H_set, U_set, key
        self.size = H_set.shape[0]
        if self.size > BOUNDS["prompt"]:
            raise ValueError(f"the random stream orders at most {BOUNDS['prompt']} prompts; the set has {self.size}")
        self.passes = 0  # the passes begun
        self.perm: Array | None = None  # the order of the pass under way
        self.position = self.size  # at the end of a pass: the next minibatch starts a new one
        self.rows = 0  # the largest block an attached engine asks for, in prompts

    def attach(self, engine: Engine) -> None:
        """Check that the set fits ``engine``; size the gather buffers for its blocks."""
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
        if e.S * e.B > self.rows:
            self.rows = e.S * e.B
            self.index = zeros(self.H_set, self.rows, kind="index")
            self.H_rows, self.U_rows = zeros(self.H_set, self.rows, D, T), zeros(self.H_set, self.rows, e.m)
        if e.compiled:  # the set as the compiled gather reads it (no copy where it is contiguous)
            self.H_set_array, self.U_set_array = (np.ascontiguousarray(as_array(x)) for x in (self.H_set, self.U_set))

    def prepare(self, engine: Engine, n: int) -> None:
        """Gather the next ``n`` minibatches of ``engine.B`` prompts into the engine's block, contiguous."""
        B, rows = engine.B, n * engine.B
        index = self.index[:rows]
        i = 0
        while i < n:
            if self.position == self.size:
                from onenn.training.philox import permutation  # compiled: the reference's permutation, faster

                self.perm = permutation(self.key, self.size, self.passes)
                if not isinstance(self.H_set, np.ndarray):
                    import torch

                    self.perm = torch.from_numpy(self.perm).to(self.H_set.device)
                self.position, self.passes = 0, self.passes + 1
            left = min(n - i, (self.size - self.position) // B)  # the minibatches left in this pass
            if left == 0:
                raise ValueError(
                    f"a minibatch of {B} prompts would cross the end of a pass ({self.size - self.position} left)"
                )
            index[i * B : (i + left) * B] = self.perm[self.position : self.position + left * B]
            self.position += left * B
            i += left
        if engine.compiled:
            arrays = (self.H_set_array, self.U_set_array, as_array(index), engine.H_array, engine.U_array)
            engine.kernels.gather_block(*arrays, n)
            return
        import torch

        H_rows, U_rows = self.H_rows[:rows], self.U_rows[:rows]
        torch.index_select(self.H_set, 0, index, out=H_rows)  # (n·B, D, T)
        torch.index_select(self.U_set, 0, index, out=U_rows)  # (n·B, m)
        engine.H[:n].copy_(H_rows.view(n, B, *H_rows.shape[1:]).permute(0, 2, 3, 1))
        engine.U[:n].copy_(U_rows.view(n, B, -1).permute(0, 2, 1))
