"""The fused CUDA engine: a whole block of SGD steps of one run in one Triton kernel launch.

The eager engine (``onenn.training.engine``) is the CPU path and the reference; on a GPU its twenty-odd tiny
kernels a step are each a launch of several µs while the GPU does almost nothing. Here one program per run
keeps ``W`` (D, D) in registers across the block's steps and, each step,

1. draws the minibatch inside the kernel from Philox (``tl.randn``, ``tl.randint``): the key is the run's
   minibatch seed (``seed + 1``, as the eager engine's generator), the 64-bit counter is ``step · 2³² + i``,
   so the stream depends neither on the block size nor on the run length;
2. puts the inputs on the sphere, forms the label codes and the 1-NN target;
3. runs the forward pass of the query column, ``g = ∂loss/∂ℓ`` for the run's loss, ``r = Σ_j ∂loss/∂s_j h_j``;
4. adds ``−lr · mean_b r_b h_{N+1,b}ᵀ`` into ``W`` and writes the step's minibatch loss.

The prompts of a minibatch are processed in chunks of ``chunk`` (a speed knob: results do not depend on it up
to rounding). Tensor shapes in the kernel: ``(BC, NP, DP)`` for a chunk's context tokens, ``(BC, DP)`` for its
query columns, with ``BC`` prompts, ``NP ≥ N`` context tokens and ``DP ≥ D`` coordinates (powers of two, the
padding masked). The query is kept apart from the context, so ``N = 16, 32, 64`` need no padding of tokens.

The stream (a choice of this project, docs/performance.md#gpu): step ``t``, prompt ``b``, token ``j``
(``j = N`` the query), coordinate ``k < d``: the Gaussian ``z = randn(seed + 1, t·2³² + (b·(N+1) + j)·d + k)``
(float32, for both training precisions, like the eager engine); class of context token ``j < N``:
``⌊K · randint(seed + 1, t·2³² + d·(N+1)·B + b·N + j) / 2³²⌋`` (multiply-shift: a bias of at most ``K/2³²``).

No ``tl.dot``: every product is a broadcast and a sum, exact in the training precision (no TF32), and float64
is float64 throughout. On a CPU tensor the kernel runs only in Triton's interpreter (``TRITON_INTERPRET=1``
before triton is imported), which is how the tests run it on machines without a GPU.

``minibatches`` (tests): read step ``t``'s draws from ``Z[t]`` (d, N+1, B) float32 and ``C[t]`` (N, B) instead of
drawing them, the layout of the eager engine's ``draw_step``, so the two engines can be compared on the same
data.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from onenn.losses import LOSSES, Loss

#: steps per kernel launch: a speed knob only (a launch also ends at every saved step)
BLOCK_STEPS = 1024
#: prompts a program processes at once (rounded to a power of two, at most the batch's)
CHUNK = 32
NUM_WARPS = 4
TL_DTYPES = {torch.float32: tl.float32, torch.float64: tl.float64}
MINUS_INF = tl.constexpr(float("-inf"))


def interpreting() -> bool:
    """Whether Triton was imported in interpreter mode (``TRITON_INTERPRET=1``): kernels then run on CPU tensors."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@triton.jit
def draw_chunk(
    seed,
    step,
    b0,
    d: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    B: tl.constexpr,
    NP: tl.constexpr,
    DP: tl.constexpr,
    BC: tl.constexpr,
):
    """Step ``step``'s draws for prompts ``b0 .. b0 + BC − 1``: the context's Gaussians ``(BC, NP, DP)`` and the
    query's ``(BC, DP)`` (float32, zero at the padding and at coordinates ``≥ d``), the classes ``(BC, NP)``."""
    T: tl.constexpr = N + 1
    e = tl.arange(0, DP)
    b = b0 + tl.arange(0, BC)
    j = tl.arange(0, NP)
    counter = step.to(tl.int64) << 32  # the step is the counter's high word
    ok2 = b[:, None] < B
    token3 = (ok2 & (j[None, :] < N))[:, :, None]
    is_x3 = e[None, None, :] < d
    zc = tl.randn(seed, counter + ((b[:, None, None] * T + j[None, :, None]) * d + e[None, None, :]))
    zq = tl.randn(seed, counter + ((b[:, None] * T + N) * d + e[None, :]))
    zc = tl.where(token3 & is_x3, zc, 0.0)
    zq = tl.where(ok2 & (e[None, :] < d), zq, 0.0)
    bits = tl.randint(seed, counter + (d * T * B + b[:, None] * N + j[None, :])).to(tl.int64)  # zero-extended
    cls = ((bits * K) >> 32).to(tl.int32)  # ⌊K · bits / 2³²⌋
    return zc, zq, cls


@triton.jit
def load_chunk(
    z_ptr,
    c_ptr,
    z_s0,
    z_s1,
    z_s2,
    z_s3,
    c_s0,
    c_s1,
    c_s2,
    step,
    b0,
    d: tl.constexpr,
    N: tl.constexpr,
    B: tl.constexpr,
    NP: tl.constexpr,
    DP: tl.constexpr,
    BC: tl.constexpr,
):
    """What ``draw_chunk`` returns, read from pre-drawn ``Z[step]`` (d, N+1, B) and ``C[step]`` (N, B)."""
    e = tl.arange(0, DP)
    b = b0 + tl.arange(0, BC)
    j = tl.arange(0, NP)
    ok2 = b[:, None] < B
    token2 = ok2 & (j[None, :] < N)
    z_step = z_ptr + step * z_s0
    e3, j3, b3 = e[None, None, :], j[None, :, None], b[:, None, None]
    zc = tl.load(z_step + e3 * z_s1 + j3 * z_s2 + b3 * z_s3, mask=token2[:, :, None] & (e3 < d), other=0.0)
    zq = tl.load(z_step + e[None, :] * z_s1 + N * z_s2 + b[:, None] * z_s3, mask=ok2 & (e[None, :] < d), other=0.0)
    cls = tl.load(c_ptr + step * c_s0 + j[None, :] * c_s1 + b[:, None] * c_s2, mask=token2, other=0)
    return zc, zq, cls.to(tl.int32)


@triton.jit
def stream_kernel(
    z_ptr,  # (steps, d, N+1, B) float32: the Gaussians, in the eager engine's layout
    c_ptr,  # (steps, N, B) int64: the classes
    seed,
    first_step,
    n_steps,
    d: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    B: tl.constexpr,
    NP: tl.constexpr,
    DP: tl.constexpr,
    BC: tl.constexpr,
):
    """The training stream alone: what ``sgd_block_kernel`` draws at steps ``first_step ..``, written out."""
    T: tl.constexpr = N + 1
    e = tl.arange(0, DP)
    j = tl.arange(0, NP)
    for i in range(n_steps):
        z_step = z_ptr + i * (d * T * B)
        for b0 in range(0, B, BC):
            zc, zq, cls = draw_chunk(seed, first_step + i, b0, d, N, K, B, NP, DP, BC)
            b = b0 + tl.arange(0, BC)
            ok2 = b[:, None] < B
            token2 = ok2 & (j[None, :] < N)
            e3, j3, b3 = e[None, None, :], j[None, :, None], b[:, None, None]
            tl.store(z_step + (e3 * T + j3) * B + b3, zc, mask=token2[:, :, None] & (e3 < d))
            tl.store(z_step + (e[None, :] * T + N) * B + b[:, None], zq, mask=ok2 & (e[None, :] < d))
            tl.store(c_ptr + i * (N * B) + j[None, :] * B + b[:, None], cls.to(tl.int64), mask=token2)


@triton.jit
def sgd_block_kernel(
    W_ptr,  # (D, D) training precision, updated in place
    loss_ptr,  # (n_steps,): the minibatch loss of each step of the block
    consts_ptr,  # training precision: [−lr/B, 1/K, 1 − c, c] (c: the mixture's cross-entropy weight)
    seed,  # the Philox key: the run's minibatch seed
    z_ptr,  # PREDRAWN: float32 Gaussians (steps, d, N+1, B) with strides z_s0..z_s3
    c_ptr,  # PREDRAWN: int64 classes (steps, N, B) with strides c_s0..c_s2
    z_s0,
    z_s1,
    z_s2,
    z_s3,
    c_s0,
    c_s1,
    c_s2,
    first_step,  # the run's step number of the block's first step (RNG counter; PREDRAWN: the index)
    n_steps,
    d: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    B: tl.constexpr,
    DP: tl.constexpr,
    NP: tl.constexpr,
    BC: tl.constexpr,
    LOSS: tl.constexpr,  # 0 square, 1 cross entropy, 2 mixture, 3 squentropy
    PREDRAWN: tl.constexpr,
    DTYPE: tl.constexpr,
):
    D: tl.constexpr = d + K + 1
    alpha = tl.load(consts_ptr)  # −lr/B
    inv_K = tl.load(consts_ptr + 1)
    w_square = tl.load(consts_ptr + 2)
    w_ce = tl.load(consts_ptr + 3)

    e = tl.arange(0, DP)  # embedding coordinate
    b_ = tl.arange(0, BC)  # prompt within the chunk
    j_ = tl.arange(0, NP)  # context token
    e2, b2, j2, e3 = e[None, :], b_[:, None], j_[None, :], e[None, None, :]
    is_label2 = (e2 >= d) & (e2 < d + K)
    is_x3, is_label3 = e3 < d, (e3 >= d) & (e3 < d + K)
    W_mask = (e[:, None] < D) & (e[None, :] < D)
    W = tl.load(W_ptr + e[:, None] * D + e[None, :], mask=W_mask, other=0.0)

    for i in range(n_steps):
        step = first_step + i
        grad = tl.zeros((DP, DP), DTYPE)  # Σ_b r_b h_{N+1,b}ᵀ
        loss_sum = tl.zeros((BC,), DTYPE)
        for b0 in range(0, B, BC):
            # --- the chunk's minibatch: Gaussians (zero where masked) and classes ---
            ok2 = b0 + b2 < B  # a real prompt: (BC, 1)
            token2 = ok2 & (j2 < N)  # a real context token: (BC, NP)
            token3 = token2[:, :, None]
            if PREDRAWN:
                zc, zq, cls = load_chunk(
                    z_ptr, c_ptr, z_s0, z_s1, z_s2, z_s3, c_s0, c_s1, c_s2, step, b0, d, N, B, NP, DP, BC
                )
            else:
                zc, zq, cls = draw_chunk(seed, step, b0, d, N, K, B, NP, DP, BC)
            # --- inputs on the sphere, label codes, the embedding ---
            xc = zc.to(DTYPE)
            sq = tl.sum(xc * xc, axis=2)
            xc = xc * (1.0 / tl.sqrt(tl.where(sq > 0, sq, 1.0)))[:, :, None]
            xq = zq.to(DTYPE)
            sq_q = tl.sum(xq * xq, axis=1)
            xq = xq * (1.0 / tl.sqrt(tl.where(sq_q > 0, sq_q, 1.0)))[:, None]
            one_hot = (cls[:, :, None] == e3 - d).to(DTYPE)
            H = tl.where(is_x3, xc, tl.where(is_label3 & token3, one_hot - inv_K, 0.0))  # h_j, j ≤ N: (BC, NP, DP)
            hq = tl.where(e2 == D - 1, ok2.to(DTYPE), xq)  # h_{N+1} = [x; 0; 1]: (BC, DP)
            # --- the 1-NN target: the largest inner product with the query (the first, like argmax) ---
            inner = tl.where(token2, tl.sum(H * xq[:, None, :], axis=2), MINUS_INF)
            nn = tl.argmax(inner, axis=1, tie_break_left=True)
            c_star = tl.sum(tl.where(j2 == nn[:, None], cls, 0), axis=1)  # (BC,)
            is_star = is_label2 & (e2 - d == c_star[:, None])
            # --- forward pass of the query column ---
            v = tl.sum(W[None, :, :] * hq[:, None, :], axis=2)  # W h_{N+1}: (BC, DP)
            s = tl.where(token2, tl.sum(H * v[:, None, :], axis=2), MINUS_INF)  # (BC, NP)
            s_q = tl.sum(hq * v, axis=1)  # the query's own score: (BC,)
            m = tl.maximum(tl.max(s, axis=1), s_q)
            p = tl.exp(s - m[:, None])
            p_q = tl.exp(s_q - m)
            total = tl.sum(p, axis=1) + p_q
            q = p / total[:, None]
            q_q = p_q / total
            ell = tl.where(is_label2, tl.sum(H * q[:, :, None], axis=1), 0.0)  # ℓ = Σ_j q_j u_{c_j}: (BC, DP)
            # --- the loss and g = ∂loss/∂ℓ (docs/method.md §2), zero outside the label coordinates ---
            if LOSS == 0:
                g = tl.where(is_label2, ell - (is_star.to(DTYPE) - inv_K), 0.0)
                loss = 0.5 * tl.sum(g * g, axis=1)
            else:
                masked = tl.where(is_label2, ell, MINUS_INF)
                top = tl.max(masked, axis=1)
                log_total = tl.log(tl.sum(tl.exp(masked - top[:, None]), axis=1))
                log_p = ell - top[:, None] - log_total[:, None]
                loss = -tl.sum(tl.where(is_star, log_p, 0.0), axis=1)
                g = tl.where(is_label2, tl.exp(log_p), 0.0) - is_star.to(DTYPE)
                if LOSS == 2:
                    u_star = tl.where(is_label2, is_star.to(DTYPE) - inv_K, 0.0)
                    g_square = ell - u_star
                    loss = w_square * (0.5 * tl.sum(g_square * g_square, axis=1)) + w_ce * loss
                    g = w_square * g_square + w_ce * g
                elif LOSS == 3:
                    off = tl.where(is_label2 & ~is_star, ell, 0.0)
                    loss = loss + tl.sum(off * off, axis=1) / (K - 1)
                    g = g + 2.0 * off / (K - 1)
            loss_sum += tl.where(b0 + b_ < B, loss, 0.0)
            # --- backward: ∂loss/∂s_j = q_j (a_j − ⟨ℓ, g⟩), a_j = ⟨u_{c_j}, g⟩ (0 for the query) ---
            a = tl.sum(H * g[:, None, :], axis=2)  # (BC, NP)
            qa = q * a
            lg = tl.sum(qa, axis=1)  # ⟨ℓ, g⟩ = Σ_j q_j a_j
            ds = qa - q * lg[:, None]
            ds_q = -(q_q * lg)
            r = tl.sum(H * ds[:, :, None], axis=1) + ds_q[:, None] * hq  # Σ_j ∂loss/∂s_j h_j: (BC, DP)
            grad += tl.sum(r[:, :, None] * hq[:, None, :], axis=0)
        W = W + alpha * grad  # W −= lr · mean_b r_b h_{N+1,b}ᵀ
        tl.store(loss_ptr + i, tl.sum(loss_sum, axis=0) / B)
    tl.store(W_ptr + e[:, None] * D + e[None, :], W, mask=W_mask)


def next_power_of_two(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def draw_stream(
    seed: int, first_step: int, steps: int, *, d: int, N: int, K: int, batch: int, device: torch.device | str
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fused engine's minibatches of steps ``first_step ..`` of the stream keyed by ``seed``, in the
    layout of the eager engine's ``draw_step``: Gaussians ``Z`` (steps, d, N+1, B) float32 and classes ``C``
    (steps, N, B) int64. The same numbers as the training kernel draws, by the same code."""
    Z = torch.zeros(steps, d, N + 1, batch, dtype=torch.float32, device=device)
    C = torch.zeros(steps, N, batch, dtype=torch.int64, device=device)
    stream_kernel[(1,)](
        Z,
        C,
        seed,
        first_step,
        steps,
        d=d,
        N=N,
        K=K,
        B=batch,
        NP=next_power_of_two(N),
        DP=next_power_of_two(d),
        BC=min(CHUNK, next_power_of_two(batch)),
    )
    return Z, C


class FusedEngine:
    """SGD for one run with the fused kernel; the interface of ``onenn.training.engine.Engine``. ``run``
    updates ``W`` (D, D) in place, on a CUDA device (or a CPU tensor under the interpreter)."""

    def __init__(
        self,
        W: torch.Tensor,
        *,
        d: int,
        N: int,
        K: int,
        batch: int,
        lr: float,
        loss: Loss,
        seed: int,
        block: int = BLOCK_STEPS,
        chunk: int = CHUNK,
        num_warps: int = NUM_WARPS,
        minibatches: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> None:
        D, T = d + K + 1, N + 1
        if W.shape != (D, D):
            raise ValueError(f"W must be (D, D) = ({D}, {D}) for d={d}, K={K}; got {tuple(W.shape)}")
        if W.dtype not in TL_DTYPES:
            raise ValueError(f"W must be float32 or float64; got {W.dtype}")
        if W.device.type != "cuda" and not interpreting():
            raise RuntimeError(
                f"the fused engine runs on a CUDA device; W is on {W.device} (CPU tensors only under Triton's "
                "interpreter, TRITON_INTERPRET=1, as in the tests); use the eager engine on the CPU"
            )
        if d * T * batch + N * batch >= 2**32:
            raise ValueError(f"a step draws {d * T * batch + N * batch} numbers; the counter allows < 2**32")
        if not 0 <= seed < 2**63:
            raise ValueError(f"seed must lie in 0..2**63-1; got {seed}")
        if block < 1:
            raise ValueError(f"block must be at least 1; got {block}")
        self.W, self.d, self.N, self.K, self.B = W, d, N, K, batch
        self.loss, self.seed, self.block, self.num_warps = loss, seed, block, num_warps
        self.chunk = min(next_power_of_two(chunk), next_power_of_two(batch))
        self.step = 0  # the next step's number in the run's stream
        dev = W.device
        # constants in the training precision (a Python float reaches a Triton kernel as float32)
        consts = [-torch.tensor(lr, dtype=W.dtype).item() / batch, 1.0 / K, 1.0 - loss.c, loss.c]
        self.consts = torch.tensor(consts, dtype=W.dtype, device=dev)
        if minibatches is None:
            self.Z = torch.zeros(1, dtype=torch.float32, device=dev)
            self.C = torch.zeros(1, dtype=torch.int64, device=dev)
        else:
            self.Z, self.C = minibatches
            if self.Z.shape[1:] != (d, T, batch) or self.C.shape[1:] != (N, batch) or len(self.Z) != len(self.C):
                raise ValueError(
                    f"minibatches must be Z (steps, {d}, {T}, {batch}) and C (steps, {N}, {batch}); "
                    f"got {tuple(self.Z.shape)} and {tuple(self.C.shape)}"
                )
        self.predrawn = minibatches is not None

    def run(self, steps: int, saved_steps: list[int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``steps`` SGD steps from the current ``W``. Return ``W`` after each of ``saved_steps`` steps (sorted,
        in ``0..steps``): (S, D, D), and the minibatch loss of every step: (steps,)."""
        saved_steps = list(saved_steps or [])
        if saved_steps != sorted(saved_steps) or not all(0 <= t <= steps for t in saved_steps):
            raise ValueError(f"saved_steps must be sorted and lie in 0..{steps}; got {saved_steps}")
        if self.predrawn and self.step + steps > len(self.Z):
            raise ValueError(f"minibatches hold {len(self.Z)} steps; the run needs {self.step + steps}")
        W = self.W
        saved = torch.empty(len(saved_steps), *W.shape, dtype=W.dtype, device=W.device)
        losses = torch.empty(steps, dtype=W.dtype, device=W.device)
        k, t = 0, 0
        while True:
            while k < len(saved_steps) and saved_steps[k] == t:
                saved[k].copy_(W)
                k += 1
            if t == steps:
                return saved, losses
            stop = min(steps, t + self.block, *saved_steps[k : k + 1])
            self.launch(stop - t, losses[t:stop])
            t = stop

    def launch(self, n: int, losses: torch.Tensor) -> None:
        """The next ``n`` steps of the run's stream in one kernel launch; their minibatch losses into ``losses``."""
        Z, C = self.Z, self.C
        z_strides = Z.stride() if self.predrawn else (0, 0, 0, 0)
        c_strides = C.stride() if self.predrawn else (0, 0, 0)
        sgd_block_kernel[(1,)](
            self.W,
            losses,
            self.consts,
            self.seed,
            Z,
            C,
            *z_strides,
            *c_strides,
            self.step,
            n,
            d=self.d,
            N=self.N,
            K=self.K,
            B=self.B,
            DP=next_power_of_two(self.d + self.K + 1),
            NP=next_power_of_two(self.N),
            BC=self.chunk,
            LOSS=LOSSES.index(self.loss.name),
            PREDRAWN=self.predrawn,
            DTYPE=TL_DTYPES[self.W.dtype],
            num_warps=self.num_warps,
        )
        self.step += n
