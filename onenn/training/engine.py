"""The training engine: SGD on the minibatch loss (docs/method.md §4), with every buffer allocated once.

The mathematics is that of ``onenn.maths.model`` and ``onenn.maths.gradient``, the readable reference; tests check that
the engine agrees with it and with autograd (``onenn.training.baseline``). This module only arranges it for speed.

Layout: a minibatch is held as its embedding with the *prompt index innermost*, ``H`` of shape ``(D, T, B)``
with ``T = N + 1`` tokens (the query last) and ``B`` prompts. Every operation of a step is then an
elementwise product of contiguous ``(T, B)`` planes followed by a sum over one axis, instead of a loop over
``B`` tiny matrices (``torch.bmm`` on ``(B, T, D)`` is several times slower here). Only the query column of
the scores is formed, ``s = H^T W h_{N+1}``, and the gradient is the rank-one ``r h_{N+1}^T``, added into ``W``
in place.

Work that does not depend on ``W`` is done for a block of ``BLOCK`` steps at once by the run's *minibatch
source* (``MinibatchSource``; ``onenn.training.sources``: fresh draws or a fixed prompt set), the one thing that
differs between runs. The engine runs on any device; on CUDA (the reference path there: the fused kernel of
``onenn.training.fused`` is the fast one) every buffer lives on the GPU. On the CPU the steps run as compiled
loops over the same buffers (``onenn.training.kernels``): the torch operations below are then the definition
they are tested against.

The buffers are of the kind of ``W``: torch tensors on its device, or, for the compiled kernels alone, numpy arrays.
A training job on the CPU passes a numpy ``W`` (``onenn.training.run_setup.make_engine``'s ``numpy``), and then never
imports torch: this module imports it only where a torch operation runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from onenn.maths.losses import Loss

if TYPE_CHECKING:
    import torch

    from onenn.base.progress import Progress

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


class MinibatchSource(Protocol):
    """Where an engine's minibatches come from: ``onenn.training.sources``' ``FreshDraws`` (fresh prompts) and
    ``FixedSet`` (a fixed prompt set)."""

    def attach(self, engine: Engine) -> None:
        """Check that the source fits ``engine``; allocate what filling the engine's block needs."""

    def prepare(self, engine: Engine, n: int) -> None:
        """The next ``n`` minibatches into the engine's block (``H``, ``U``, ``target_class``), with everything in
        them that does not depend on ``W``."""


class Engine:
    """SGD for one run. ``run`` updates ``W`` (D, D) in place. ``m`` is the label width: the number of classes
    ``K``, or 1 for scalar labels. The minibatches come from ``source`` (``MinibatchSource``; a run's is built by
    ``onenn.training.run_setup.make_engine``). ``compiled``: the steps and the source's preparation through the
    compiled kernels of ``onenn.training.kernels`` (numba) instead of torch operations; by default on the CPU.
    ``W`` is a torch tensor, or, for the compiled kernels alone, a numpy array: the engine's buffers, and what
    ``run`` returns, are then numpy arrays too, and torch is not imported."""

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
        source: MinibatchSource,
        block: int = BLOCK,
        compiled: bool | None = None,
    ) -> None:
        D, T, B, S = d + m + 1, N + 1, batch, block
        if W.shape != (D, D):
            raise ValueError(f"W must be (D, D) = ({D}, {D}) for d={d}, m={m}; got {tuple(W.shape)}")
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
        self.source = source
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
        self.lr_over_batch = W.dtype.type(self.lr / self.B)
        self.H_array, self.U_array = as_array(self.H), as_array(self.U)  # also the sources' kernels' output
        self.step_arrays = (W, self.H_array, self.U_array, *map(as_array, (self.target_class, self.G, self.L)))
        self.scratch = tuple(map(as_array, (self.v, self.s, self.a, self.r, self.lg[0])))

    def _step_views(self, i: int) -> tuple[torch.Tensor, ...]:
        H = self.H[i]  # (D, T, B)
        h_query = H[:, -1, :]  # h_{N+1}: (D, B)
        labels = H[self.d : self.d + self.m]  # y_j, with y_{N+1} = 0: (m, T, B)
        return H, h_query, h_query.T, labels, self.U[i], self.G[i], self.G[i][:, None, :]

    def run(
        self, steps: int, saved_steps: list[int] | None = None, progress: Progress | None = None
    ) -> tuple[Array, Array]:
        """``steps`` SGD steps from the current ``W``. Return ``W`` after each of ``saved_steps`` steps (sorted,
        in ``0..steps``): (S, D, D), and the minibatch loss of every step: (steps,), of the kind of ``W``.
        ``progress`` (``onenn.base.progress.Progress``), if given, is called after every block: the steps done,
        ``steps`` and the minibatch loss of the block's last step (an element of the losses, not read here)."""
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
            if progress is not None:
                progress(start + n, steps, losses[start + n - 1])
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
            self.kernels.sgd_steps(*self.step_arrays, first, last, self.lr_over_batch, *self.loss_code, *self.scratch)
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
        """g and the minibatch loss for the losses other than the square loss (``onenn.maths.losses``)."""
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
