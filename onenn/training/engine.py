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
"""

from __future__ import annotations

import torch

from onenn.losses import Loss
from onenn.stream import BOUNDS, check_minibatch

#: steps whose W-independent work is done together: a speed knob only, results do not depend on it
BLOCK = 16


def draw_step(z: torch.Tensor, classes: torch.Tensor, K: int, key: int, step: int) -> None:
    """Step ``step``'s random numbers of the run with the minibatch key ``key`` (docs/method.md §4.4), in place:
    standard Gaussians ``z`` (d, N+1, B) float32, then classes ``classes`` (N, B) int64 uniform on ``0..K-1``.

    This defines the training stream: input ``x_j`` of prompt ``b`` is ``z[:, j, b] / ‖z[:, j, b]‖`` (uniform
    on the sphere) and its class is ``classes[j, b]``; each number is the stream's at ``(step, b, j, k)``
    (``onenn.stream.minibatch``), drawn on the CPU by the compiled implementation ``onenn.training.philox`` (the
    same bits for every CPU engine) and copied to ``z``'s device. The draws are float32 for every training dtype,
    so a float64 run sees the points of the float32 run with the same seed, normalised in float64.
    """
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
    (``onenn.stream.stream_key(seed, "minibatches")``) instead, from ``FreshDraws(key)``. ``compiled``: the steps and the source's preparation through the
    compiled kernels of ``onenn.training.kernels`` (numba) instead of torch operations; by default on the CPU."""

    def __init__(
        self,
        W: torch.Tensor,
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
            compiled = W.device.type == "cpu"
        if compiled and W.device.type != "cpu":
            raise ValueError(f"the compiled kernels run on the CPU; W is on {W.device}")
        self.compiled = compiled
        # the learning rate as a number of the training precision, as in `W -= lr * grad` (1e39 is inf in float32)
        self.lr = torch.tensor(lr, dtype=W.dtype).item()
        dev = W.device
        new = {"dtype": W.dtype, "device": dev}
        index = {"dtype": torch.long, "device": dev}

        # a block of minibatches: the embeddings, the 1-NN targets u_{c_{i*}} and g = ∂loss/∂ℓ (the source fills H,
        # U and target_class)
        self.H = torch.zeros(S, D, T, B, **new)
        self.H[:, -1, -1, :] = 1.0  # the query's indicator coordinate (its label slot stays 0)
        self.U = torch.empty(S, m, B, **new)  # u_{c_{i*}} (y_{i*} for scalar labels)
        self.G = torch.empty(S, m, B, **new)  # g
        self.L = torch.empty(S, **new)  # minibatch losses (the torch steps': of the losses other than the square loss)
        self.target_class = torch.empty(S, B, **index)  # c_{i*}, the class of the nearest neighbour
        self.G_sq = torch.empty(S, m, B, **new)
        # step scratch
        self.v = torch.empty(D, B, **new)
        self.s = torch.empty(T, B, **new)
        self.q = torch.empty(T, B, **new)
        self.ell = torch.empty(m, B, **new)
        self.a = torch.empty(T, B, **new)
        self.p = torch.empty(T, B, **new)
        self.ds = torch.empty(T, B, **new)
        self.lg = torch.empty(1, B, **new)
        self.r = torch.empty(D, B, **new)
        self.D_tmp = torch.empty(D, T, B, **new)
        self.m_tmp = torch.empty(m, T, B, **new)
        # views, made once: making a view costs about as much as a small operation
        self.v_tokens = self.v[:, None, :]  # (D, 1, B)
        self.step_views = [self._step_views(i) for i in range(S)]
        self.source = FreshDraws(key) if source is None else source
        self.source.attach(self)
        if compiled:
            self._attach_kernels()

    def _attach_kernels(self) -> None:
        """numpy views of the buffers (no copies) for ``onenn.training.kernels``, imported only here: numba is
        needed on the CPU alone."""
        from onenn.training import kernels

        self.loss_code = (kernels.loss_branch(self.loss.name), self.loss.c)  # raises if the kernels lack the loss
        if not self.W.is_contiguous():
            raise ValueError("the compiled kernels update W in place: W must be contiguous")
        self.kernels = kernels
        self.step_size = self.W.numpy().dtype.type(self.lr / self.B)
        self.H_array, self.U_array = self.H.numpy(), self.U.numpy()  # also the sources' kernels' output
        self.step_arrays = (
            self.W.numpy(),
            self.H_array,
            self.U_array,
            *(t.numpy() for t in (self.target_class, self.G, self.L)),
        )
        self.scratch = tuple(t.numpy() for t in (self.v, self.s, self.a, self.r, self.lg[0]))

    def _step_views(self, i: int) -> tuple[torch.Tensor, ...]:
        H = self.H[i]  # (D, T, B)
        h_query = H[:, -1, :]  # h_{N+1}: (D, B)
        labels = H[self.d : self.d + self.m]  # y_j, with y_{N+1} = 0: (m, T, B)
        return H, h_query, h_query.T, labels, self.U[i], self.G[i], self.G[i][:, None, :]

    def run(self, steps: int, saved_steps: list[int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``steps`` SGD steps from the current ``W``. Return ``W`` after each of ``saved_steps`` steps (sorted,
        in ``0..steps``): (S, D, D), and the minibatch loss of every step: (steps,)."""
        saved_steps = list(saved_steps or [])
        if saved_steps != sorted(saved_steps) or not all(0 <= t <= steps for t in saved_steps):
            raise ValueError(f"saved_steps must be sorted and lie in 0..{steps}; got {saved_steps}")
        W = self.W
        saved = torch.empty(len(saved_steps), *W.shape, dtype=W.dtype, device=W.device)
        losses = torch.empty(steps, dtype=W.dtype, device=W.device)
        k = 0
        for start in range(0, steps, self.S):
            n = min(self.S, steps - start)
            self.prepare_block(n)
            i = 0
            while i < n:
                while k < len(saved_steps) and saved_steps[k] == start + i:
                    saved[k].copy_(W)
                    k += 1
                stop = min(n, saved_steps[k] - start) if k < len(saved_steps) else n
                self.sgd_steps(i, stop)
                i = stop
            self.block_losses(n, losses[start : start + n])
        for rest in range(k, len(saved_steps)):  # the saved steps equal to `steps`
            saved[rest].copy_(W)
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

    def block_losses(self, n: int, out: torch.Tensor) -> None:
        """The minibatch losses of the block's ``n`` steps into ``out`` (the torch steps' square loss from the stored
        g)."""
        if self.compiled or self.loss.name != "square":
            out.copy_(self.L[:n])
            return
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
        T, dev = N + 1, engine.W.device
        new = {"dtype": e.W.dtype, "device": dev}
        index = {"dtype": torch.long, "device": dev}
        check_minibatch(d, N, B)
        self.engine = engine
        self.X = e.H[:, :d]  # inputs: (S, d, T, B)
        self.Y = e.H[:, d : d + K, :N]  # label codes of the context: (S, K, N, B)
        float32 = e.W.dtype == torch.float32  # float32 draws land in H; other dtypes are copied from Z
        self.Z = self.X if float32 else torch.empty(S, d, T, B, dtype=torch.float32, device=dev)
        self.C = torch.empty(S, N, B, **index)  # classes
        self.class_ids = torch.arange(K, **index)[:, None, None]  # 0..K-1: (K, 1, 1)
        self.offsets = torch.arange(S, **index)[:, None] * (N * B) + torch.arange(B, **index)  # C[s, 0, b]
        self.X_tmp = torch.empty(S, d, T, B, **new)
        self.sq_norm = torch.empty(S, 1, T, B, **new)
        self.inner = torch.empty(S, N, B, **new)
        self.inner_max = torch.empty(S, B, **new)
        self.nn = torch.empty(S, B, **index)
        self.draw_views = [(self.Z[i], self.C[i]) for i in range(S)]
        if dev.type == "cpu":  # the draws' numpy views (no copies), as the compiled draw writes them
            self.draw_arrays = ((e.H if float32 else self.Z).numpy(), self.C.numpy())  # contiguous: vector loops
        if e.compiled:
            self.kernel_arrays = tuple(t.numpy() for t in (e.H, self.C, e.U, e.target_class))
            one, shift = (torch.tensor(x, dtype=e.W.dtype) for x in (1.0, 1.0 / K))
            self.codes = ((one - shift).numpy()[()], (-shift).numpy()[()])  # u_c's entries, as torch rounds them
            self.kernel_scratch = tuple(torch.empty(2, B, **new).numpy())

    def prepare(self, engine: Engine, n: int) -> None:
        """Draw ``n`` minibatches, then everything that does not depend on ``W``: inputs on the sphere, the
        label codes and the 1-NN targets."""
        K = engine.m  # the number of classes
        if self.step + n > BOUNDS["step"]:
            raise ValueError(
                f"the random stream's counter holds {BOUNDS['step']} steps; step {self.step + n - 1} asked"
            )
        if engine.W.device.type == "cpu":
            from onenn.training.philox import draw_block

            draw_block(*self.draw_arrays, self.key, self.step, n, K, engine.d)
        else:
            for i, (z, classes) in enumerate(self.draw_views[:n]):
                draw_step(z, classes, K, self.key, self.step + i)
        self.step += n
        X, X_tmp, sq_norm = self.X[:n], self.X_tmp[:n], self.sq_norm[:n]
        if self.Z is not self.X:
            X.copy_(self.Z[:n])
        if engine.compiled:
            engine.kernels.prepare_fresh(*self.kernel_arrays, n, *self.codes, *self.kernel_scratch)
            return
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

    def __init__(self, H_set: torch.Tensor, U_set: torch.Tensor, key: int) -> None:
        self.H_set, self.U_set, self.key = H_set, U_set, key
        self.size = H_set.shape[0]
        if self.size > BOUNDS["prompt"]:
            raise ValueError(f"the random stream orders at most {BOUNDS['prompt']} prompts; the set has {self.size}")
        self.passes = 0  # the passes begun
        self.perm = torch.empty(0, dtype=torch.long)
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
            new = {"dtype": self.H_set.dtype, "device": self.H_set.device}
            self.index = torch.empty(self.rows, dtype=torch.long, device=self.H_set.device)
            self.H_rows = torch.empty(self.rows, D, T, **new)
            self.U_rows = torch.empty(self.rows, e.m, **new)
        if e.compiled:  # the set as the compiled gather reads it (no copy)
            self.H_set_array, self.U_set_array = self.H_set.contiguous().numpy(), self.U_set.contiguous().numpy()

    def prepare(self, engine: Engine, n: int) -> None:
        """Gather the next ``n`` minibatches of ``engine.B`` prompts into the engine's block, contiguous."""
        B, rows = engine.B, n * engine.B
        index = self.index[:rows]
        i = 0
        while i < n:
            if self.position == self.size:
                from onenn.training.philox import permutation  # compiled: the reference's permutation, faster

                self.perm = torch.from_numpy(permutation(self.key, self.size, self.passes)).to(self.H_set.device)
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
            arrays = (self.H_set_array, self.U_set_array, index.numpy(), engine.H_array, engine.U_array)
            engine.kernels.gather_block(*arrays, n)
            return
        H_rows, U_rows = self.H_rows[:rows], self.U_rows[:rows]
        torch.index_select(self.H_set, 0, index, out=H_rows)  # (n·B, D, T)
        torch.index_select(self.U_set, 0, index, out=U_rows)  # (n·B, m)
        engine.H[:n].copy_(H_rows.view(n, B, *H_rows.shape[1:]).permute(0, 2, 3, 1))
        engine.U[:n].copy_(U_rows.view(n, B, -1).permute(0, 2, 1))
