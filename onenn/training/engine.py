"""The training engine: SGD on the minibatch loss (docs/method.md §4), fused, with every buffer allocated once.

The mathematics is that of ``onenn.model`` and ``onenn.gradient``, the readable reference; tests check that
the engine agrees with it and with autograd (``onenn.training.baseline``). This module only arranges it for speed.

Layout: a minibatch is held as its embedding with the *prompt index innermost*, ``H`` of shape ``(D, T, B)``
with ``T = N + 1`` tokens (the query last) and ``B`` prompts. Every operation of a step is then an
elementwise product of contiguous ``(T, B)`` planes followed by a sum over one axis, instead of a loop over
``B`` tiny matrices (``torch.bmm`` on ``(B, T, D)`` is several times slower here). Only the query column of
the scores is formed, ``s = H^T W h_{N+1}``, and the gradient is the rank-one ``r h_{N+1}^T``, added into ``W``
in place.

Work that does not depend on ``W`` is done for a block of ``BLOCK`` steps at once by the run's *minibatch
source*, the one thing that differs between runs: ``FreshDraws`` draws fresh prompts of Assumption 1 (the
multiclass runs: normalising the inputs, the label codes, the 1-NN targets), ``FixedSet`` gathers the next
minibatches of a fixed, pre-embedded prompt set in reshuffled passes (the binary experiment, label width 1).
The random numbers are drawn one step at a time from the counter-based stream of docs/method.md §4.4
(``draw_step``), so the results do not depend on the block size nor on the run length. The engine runs on any
device; on CUDA (the reference path there: the fused kernel of ``onenn.training.fused`` is the fast one) every
buffer lives on the GPU, and each step's draws are made on the CPU and copied to it. On the CPU the steps
and the sources' preparation run as compiled loops over the same buffers
(``onenn.training.kernels``): the torch operations below are then the definition they are tested against.

The buffers are of the kind of ``W``: torch tensors on its device, or, for the compiled kernels alone, numpy arrays.
A training job on the CPU passes a numpy ``W`` (``onenn.training.setup.make_engine``'s ``numpy``), and then never
imports torch: this module imports it only where a torch operation runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from onenn.losses import Loss
from onenn.stream import BOUNDS, check_minibatch

if TYPE_CHECKING:
    import torch

    #: a buffer: a torch tensor, or a numpy array (the compiled kernels' buffers on the CPU)
    Array = torch.Tensor | np.ndarray

#: steps whose W-independent work is done together: a speed knob only, results do not depend on it
BLOCK = 16


def zeros(like: Array, *shape: int, kind: str = "float") -> Array:
    """Zeros of ``shape`` of the kind of ``like``: a numpy array, or a torch tensor on ``like``'s device. ``kind``:
    ``float`` (``like``'s dtype), ``float32`` or ``index`` (int64)."""
    if isinstance(like, np.ndarray):
        return np.zeros(shape, {"float": like.dtype, "float32": np.float32, "index": np.int64}[kind])
    import torch

    dtype = {"float": like.dtype, "float32": torch.float32, "index": torch.long}[kind]
    return torch.zeros(shape, dtype=dtype, device=like.device)


def as_array(x: Array) -> np.ndarray:
    """The numpy array of a CPU buffer (a view of a tensor's memory, no copy)."""
    return x if isinstance(x, np.ndarray) else x.numpy()


def on_cpu(x: Array) -> bool:
    """Whether a buffer is in the CPU's memory (a numpy array always is)."""
    return isinstance(x, np.ndarray) or x.device.type == "cpu"


def device_name(x: Array) -> str:
    """``cpu``, ``cuda:0``: where a buffer lives."""
    return "cpu" if isinstance(x, np.ndarray) else str(x.device)


def float64_array(x: Array) -> np.ndarray:
    """A buffer as a float64 numpy array in the CPU's memory (a copy)."""
    return x.astype(np.float64) if isinstance(x, np.ndarray) else x.double().cpu().numpy()


def rounded(x: float, like: Array) -> float:
    """``x`` rounded to the precision of ``like``'s dtype (1e39 is inf in float32), as a Python float."""
    if isinstance(like, np.ndarray):
        with np.errstate(over="ignore"):
            return float(np.asarray(x).astype(like.dtype))
    import torch

    return torch.tensor(x, dtype=like.dtype).item()


def draw_step(z: torch.Tensor, classes: torch.Tensor, K: int, key: int, step: int) -> None:
    """Step ``step``'s random numbers of the run with the minibatch key ``key`` (docs/method.md §4.4), in place:
    standard Gaussians ``z`` (d, N+1, B) float32, then classes ``classes`` (N, B) int64 uniform on ``0..K-1``.

    This defines the training stream: input ``x_j`` of prompt ``b`` is ``z[:, j, b] / ‖z[:, j, b]‖`` (uniform
    on the sphere) and its class is ``classes[j, b]``; each number is the stream's at ``(step, b, j, k)``
    (``onenn.stream.minibatch``), drawn on the CPU by the compiled implementation ``onenn.training.philox`` (the
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


class Engine:
    """SGD for one run. ``run`` updates ``W`` (D, D) in place. ``m`` is the label width: the number of classes
    ``K``, or 1 for scalar labels. The minibatches come from ``source``, or, given the run's minibatch ``key``
    (``onenn.stream.stream_key(seed, "minibatches")``) instead, from ``FreshDraws(key)``. ``compiled``: the steps and
    the source's preparation through the compiled kernels of ``onenn.training.kernels`` (numba) instead of torch
    operations; by default on the CPU. ``W`` is a torch tensor, or, for the compiled kernels alone, a numpy array:
    the engine's buffers, and what ``run`` returns, are then numpy arrays too, and torch is not imported."""

    def __init__(
        self,
        W: Array,
        *,
        d: int,
        N: int,
        m: int,
        batch: int,
        lr: float,
        loss: Loss,
        key: int | None = None,
        source: FreshDraws | FixedSet | None = None,
        block: int = BLOCK,
        compiled: bool | None = None,
    ) -> None:
        D, T, B, S = d + m + 1, N + 1, batch, block
        if W.shape != (D, D):
            raise ValueError(f"W must be (D, D) = ({D}, {D}) for d={d}, m={m}; got {tuple(W.shape)}")
        if (key is None) == (source is None):
            raise ValueError("Engine takes either a minibatch key (fresh draws) or a minibatch source, not both")
        self.W, self.d, self.N, self.m, self.B, self.S = W, d, N, m, batch, block
        self.loss = loss
        if compiled is None:
            compiled = on_cpu(W)
        if compiled and not on_cpu(W):
            raise ValueError(f"the compiled kernels run on the CPU; W is on {W.device}")
        if not compiled and isinstance(W, np.ndarray):
            raise ValueError("the torch operations (compiled=False) need W as a torch tensor; got a numpy array")
        self.compiled = compiled
        # the learning rate as a number of the training precision, as in `W -= lr * grad` (1e39 is inf in float32)
        self.lr = rounded(lr, W)

        # a block of minibatches: the embeddings, the 1-NN targets u_{c_{i*}} and g = ∂loss/∂ℓ (the source fills H,
        # U and target_class)
        self.H = zeros(W, S, D, T, B)
        self.H[:, -1, -1, :] = 1.0  # the query's indicator coordinate (its label slot stays 0)
        self.U = zeros(W, S, m, B)  # u_{c_{i*}} (y_{i*} for scalar labels)
        self.G = zeros(W, S, m, B)  # g
        self.L = zeros(W, S)  # minibatch losses (the torch steps': of the losses other than the square loss)
        self.target_class = zeros(W, S, B, kind="index")  # c_{i*}, the class of the nearest neighbour
        # step scratch (the compiled kernels use v, s, a, r and lg)
        self.v, self.s, self.a, self.r = zeros(W, D, B), zeros(W, T, B), zeros(W, T, B), zeros(W, D, B)
        self.lg = zeros(W, 1, B)
        if not compiled:
            self._attach_torch_scratch()
        self.source = FreshDraws(key) if source is None else source
        self.source.attach(self)
        if compiled:
            self._attach_kernels()

    def _attach_torch_scratch(self) -> None:
        """The scratch and the views of the torch steps."""
        W, D, T, B, S, m = self.W, self.d + self.m + 1, self.N + 1, self.B, self.S, self.m
        self.G_sq = zeros(W, S, m, B)
        self.q, self.p, self.ds = zeros(W, T, B), zeros(W, T, B), zeros(W, T, B)
        self.ell = zeros(W, m, B)
        self.D_tmp = zeros(W, D, T, B)
        self.m_tmp = zeros(W, m, T, B)
        # views, made once: making a view costs about as much as a small operation
        self.v_tokens = self.v[:, None, :]  # (D, 1, B)
        self.step_views = [self._step_views(i) for i in range(S)]

    def _attach_kernels(self) -> None:
        """numpy views of the buffers (no copies) for ``onenn.training.kernels``, imported only here: numba is
        needed on the CPU alone."""
        from onenn.training import kernels

        self.loss_code = (kernels.loss_branch(self.loss.name), self.loss.c)  # raises if the kernels lack the loss
        W = as_array(self.W)
        if not W.flags.c_contiguous or not W.flags.writeable:
            raise ValueError("the compiled kernels update W in place: W must be contiguous and writeable")
        self.kernels = kernels
        self.step_size = W.dtype.type(self.lr / self.B)
        self.H_array, self.U_array = as_array(self.H), as_array(self.U)  # also the sources' kernels' output
        self.step_arrays = (W, self.H_array, self.U_array, *map(as_array, (self.target_class, self.G, self.L)))
        self.scratch = tuple(map(as_array, (self.v, self.s, self.a, self.r, self.lg[0])))

    def _step_views(self, i: int) -> tuple[torch.Tensor, ...]:
        H = self.H[i]  # (D, T, B)
        h_query = H[:, -1, :]  # h_{N+1}: (D, B)
        labels = H[self.d : self.d + self.m]  # y_j, with y_{N+1} = 0: (m, T, B)
        return H, h_query, h_query.T, labels, self.U[i], self.G[i], self.G[i][:, None, :]

    def run(self, steps: int, saved_steps: list[int] | None = None) -> tuple[Array, Array]:
        """``steps`` SGD steps from the current ``W``. Return ``W`` after each of ``saved_steps`` steps (sorted,
        in ``0..steps``): (S, D, D), and the minibatch loss of every step: (steps,), of the kind of ``W``."""
        saved_steps = list(saved_steps or [])
        if saved_steps != sorted(saved_steps) or not all(0 <= t <= steps for t in saved_steps):
            raise ValueError(f"saved_steps must be sorted and lie in 0..{steps}; got {saved_steps}")
        W = self.W
        saved, losses = zeros(W, len(saved_steps), *W.shape), zeros(W, steps)
        k = 0
        for start in range(0, steps, self.S):
            n = min(self.S, steps - start)
            self.prepare_block(n)
            i = 0
            while i < n:
                while k < len(saved_steps) and saved_steps[k] == start + i:
                    saved[k] = W
                    k += 1
                stop = min(n, saved_steps[k] - start) if k < len(saved_steps) else n
                self.sgd_steps(i, stop)
                i = stop
            self.block_losses(n, losses[start : start + n])
        for rest in range(k, len(saved_steps)):  # the saved steps equal to `steps`
            saved[rest] = W
        return saved, losses

    def prepare_block(self, n: int) -> None:
        """The next ``n`` minibatches from the source, with everything that does not depend on ``W``."""
        if not 1 <= n <= self.S:
            raise ValueError(f"prepare_block: n must lie in 1..{self.S} (the engine's block); got {n}")
        self.source.prepare(self, n)

    def sgd_steps(self, first: int, last: int) -> None:
        """SGD steps on the prepared minibatches ``first..last-1`` of the block: the compiled kernel, or ``step``.
        The range is checked here: the compiled kernel does not check it, and would read past its buffers."""
        if not 0 <= first <= last <= self.S:
            raise ValueError(
                f"sgd_steps: first and last must satisfy 0 <= first <= last <= {self.S} (the engine's block); "
                f"got first={first}, last={last}"
            )
        if self.compiled:
            self.kernels.sgd_steps(*self.step_arrays, first, last, self.step_size, *self.loss_code, *self.scratch)
        else:
            for i in range(first, last):
                self.step(i)

    def step(self, i: int) -> None:
        """One SGD step on the prepared minibatch ``i`` of the block. Shapes: (D, T, B) for the embedding."""
        import torch

        H, h_query, h_query_T, Y, u_star, g, g_tokens = self.step_views[i]
        q, a, p, ds = self.q, self.a, self.p, self.ds
        torch.mm(self.W, h_query, out=self.v)  # W h_{N+1}: (D, B)
        torch.sum(torch.mul(H, self.v_tokens, out=self.D_tmp), 0, out=self.s)  # s_j = h_j^T W h_{N+1}: (T, B)
        torch._softmax(self.s, 0, False, out=q)  # q = softmax_j(s_j): (T, B)
        torch.sum(torch.mul(Y, q, out=self.m_tmp), 1, out=self.ell)  # ℓ = Σ_j q_j y_j: (m, B)
        if self.loss.name == "square":
            torch.sub(self.ell, u_star, out=g)  # g = ∂loss/∂ℓ = ℓ − u_{c_{i*}}
        else:
            self._loss_gradient(i, g)
        # ∂loss/∂s_j = q_j (a_j − ⟨ℓ, g⟩) with a_j = ⟨y_j, g⟩ (0 for the query) and ⟨ℓ, g⟩ = Σ_j q_j a_j
        torch.sum(torch.mul(Y, g_tokens, out=self.m_tmp), 0, out=a)
        torch.mul(q, a, out=p)
        torch.sum(p, 0, keepdim=True, out=self.lg)
        torch.addcmul(p, q, self.lg, value=-1.0, out=ds)
        torch.sum(torch.mul(H, ds, out=self.D_tmp), 1, out=self.r)  # r = Σ_j ∂loss/∂s_j h_j: (D, B)
        self.W.addmm_(self.r, h_query_T, alpha=-self.lr / self.B)  # W −= lr · mean_b r_b h_{N+1,b}^T

    def _loss_gradient(self, i: int, g: torch.Tensor) -> None:
        """g and the minibatch loss for the losses other than the square loss (``onenn.losses``)."""
        loss, grad = self.loss(self.ell.T, self.target_class[i], self.U[i].T)
        g.copy_(grad.T)
        self.L[i] = loss.mean()

    def block_losses(self, n: int, out: Array) -> None:
        """The minibatch losses of the block's ``n`` steps into ``out`` (the torch steps' square loss from the stored
        g)."""
        if self.compiled or self.loss.name != "square":
            out[...] = self.L[:n]
            return
        import torch

        G = self.G[:n]
        torch.sum(torch.mul(G, G, out=self.G_sq[:n]), (1, 2), out=out)
        out.mul_(0.5 / self.B)


class FreshDraws:
    """Fresh minibatches of Assumption 1 from the run's random stream, minibatch key ``key``, drawn one step at a
    time (``draw_step``): inputs on the sphere, the label codes ``u_c`` and the 1-NN targets ``u_{c_{i*}}``. The
    next minibatch is step ``step`` of the stream (``first_step`` at the start), so a run continued from a saved
    step with ``first_step`` set draws what the whole run would have. Its buffers are the engine's: one source
    feeds one engine."""

    def __init__(self, key: int, first_step: int = 0) -> None:
        if not 0 <= key < 2**63:
            raise ValueError(f"key must lie in 0..2**63-1 (onenn.stream.stream_key); got {key}")
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
        # 1-NN: the context point with the largest inner product with the query, as in onenn.model
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
    order ``perm = onenn.stream.permutation(key, n, p)`` of the run's ``(seed, "minibatch_order")`` key, and its
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
