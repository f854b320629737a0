"""The GPU engine (docs/method.md §4.2, docs/performance.md#gpu): a block of SGD steps in one Triton launch, drawing
with the stream's port (``draw_chunk``); CPU tensors only under Triton's interpreter (``TRITON_INTERPRET=1``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import torch
import triton
import triton.language as tl
from triton import next_power_of_2

from onenn.maths import stream
from onenn.maths.losses import Loss, loss_code, require_loss
from onenn.maths.stream import check_minibatch
from onenn.training.cpu import run_pieces

if TYPE_CHECKING:
    from onenn.base.progress import Progress

#: steps per kernel launch: a speed knob only (a launch also ends at every saved step)
BLOCK_STEPS = 1024
NUM_WARPS = 8
#: elements a thread holds of a chunk's largest tile, which sets the chunk (more would spill registers: ptxas)
PER_THREAD = {torch.float32: 16, torch.float64: 8}
TL_DTYPES = {torch.float32: tl.float32, torch.float64: tl.float64}
MINUS_INF = tl.constexpr(float("-inf"))
#: onenn.maths.stream's counter fields (their shifts) and kinds
_SHIFTS = (stream.SHIFTS[field] for field in ("token", "kind", "prompt", "step"))
TOKEN_SHIFT, KIND_SHIFT, PROMPT_SHIFT, STEP_SHIFT = (tl.constexpr(shift) for shift in _SHIFTS)
KIND_GAUSSIAN, KIND_INTEGERS = tl.constexpr(stream.KIND_GAUSSIAN), tl.constexpr(stream.KIND_INTEGERS)
#: the losses the kernel has a branch for; each branch is chosen by the loss's code in ``onenn.maths.losses``
IMPLEMENTED = ("square", "cross_entropy", "mixture", "squentropy")
SQUARE, CROSS_ENTROPY, MIXTURE, SQUENTROPY = (tl.constexpr(loss_code(name)) for name in IMPLEMENTED)


def loss_branch(name: str) -> int:
    """The code ``sgd_block_kernel`` takes for loss ``name``; raises, before compiling, if it has no branch for it."""
    branch = "sgd_block_kernel in onenn/training/gpu.py (the loss and g = ∂loss/∂ℓ)"
    return require_loss(name, IMPLEMENTED, "the GPU engine's kernel (Triton)", branch)


def interpreting() -> bool:
    """Whether Triton was imported in interpreter mode (``TRITON_INTERPRET=1``): kernels then run on CPU tensors."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@triton.jit
def stream_offset(step, prompt, kind, token, group):
    """``onenn.maths.stream.counter`` (int64), the offset ``tl.randint4x`` and ``tl.randn4x`` take."""
    t = tl.to_tensor(step).to(tl.int64) << STEP_SHIFT
    b = tl.to_tensor(prompt).to(tl.int64) << PROMPT_SHIFT
    j = tl.to_tensor(token).to(tl.int64) << TOKEN_SHIFT
    return t + b + (kind << KIND_SHIFT) + j + tl.to_tensor(group).to(tl.int64)


@triton.jit
def four_in_a_row(z0, z1, z2, z3, shape: tl.constexpr):
    """Interleave four tiles of one shape ``(..., Q)`` into ``shape = (..., 4Q)``: ``z_r[..., m]`` at ``4m + r``."""
    return tl.reshape(tl.join(tl.join(z0, z2), tl.join(z1, z3)), shape)


@triton.jit
def draw_chunk(key, step, b0, d: tl.constexpr, N: tl.constexpr, K: tl.constexpr, B: tl.constexpr, NP: tl.constexpr,
               XP: tl.constexpr, BC: tl.constexpr):  # fmt: skip
    """Step ``step``'s draws for prompts ``b0 ..``: context and query Gaussians (float32, 0 at the padding), classes."""
    b = b0 + tl.arange(0, BC)
    m = tl.arange(0, XP // 4)
    j = tl.arange(0, NP)
    z0, z1, z2, z3 = tl.randn4x(
        key, stream_offset(step, b[:, None, None], KIND_GAUSSIAN, j[None, :, None], m[None, None, :])
    )
    zc = four_in_a_row(z0, z1, z2, z3, (BC, NP, XP))
    z0, z1, z2, z3 = tl.randn4x(key, stream_offset(step, b[:, None], KIND_GAUSSIAN, N, m[None, :]))
    zq = four_in_a_row(z0, z1, z2, z3, (BC, XP))
    i0, i1, i2, i3 = tl.randint4x(
        key, stream_offset(step, b[:, None], KIND_INTEGERS, tl.arange(0, NP // 4)[None, :], 0)
    )
    bits = four_in_a_row(i0, i1, i2, i3, (BC, NP)).to(tl.int64)  # uint32, zero-extended
    cls = ((bits * K) >> 32).to(tl.int32)  # ⌊K · bits / 2³²⌋
    ok = b[:, None] < B
    k = tl.arange(0, XP)
    zc = tl.where((ok & (j[None, :] < N))[:, :, None] & (k[None, None, :] < d), zc, 0.0)
    zq = tl.where(ok & (k[None, :] < d), zq, 0.0)
    return zc, zq, cls


@triton.jit
def load_chunk(z_ptr, c_ptr, z_s0, z_s1, z_s2, z_s3, c_s0, c_s1, c_s2, step, b0, d: tl.constexpr, N: tl.constexpr,
               B: tl.constexpr, NP: tl.constexpr, XP: tl.constexpr, BC: tl.constexpr):  # fmt: skip
    """What ``draw_chunk`` returns, read from pre-drawn ``Z[step]`` (d, N+1, B) and ``C[step]`` (N, B)."""
    k = tl.arange(0, XP)
    b = b0 + tl.arange(0, BC)
    j = tl.arange(0, NP)
    ok = b[:, None] < B
    token = ok & (j[None, :] < N)
    z_step = z_ptr + step * z_s0
    k3, j3, b3 = k[None, None, :], j[None, :, None], b[:, None, None]
    zc = tl.load(z_step + k3 * z_s1 + j3 * z_s2 + b3 * z_s3, mask=token[:, :, None] & (k3 < d), other=0.0)
    zq = tl.load(z_step + k[None, :] * z_s1 + N * z_s2 + b[:, None] * z_s3, mask=ok & (k[None, :] < d), other=0.0)
    cls = tl.load(c_ptr + step * c_s0 + j[None, :] * c_s1 + b[:, None] * c_s2, mask=token, other=0)
    return zc, zq, cls.to(tl.int32)


@triton.jit
def sgd_block_kernel(W_ptr, loss_ptr, consts_ptr, key, z_ptr, c_ptr, z_s0, z_s1, z_s2, z_s3, c_s0, c_s1, c_s2,
                     first_step, n_steps, d: tl.constexpr, N: tl.constexpr, K: tl.constexpr, B: tl.constexpr,
                     NP: tl.constexpr, XP: tl.constexpr, KP: tl.constexpr, BC: tl.constexpr, LOSS: tl.constexpr,
                     PREDRAWN: tl.constexpr, DTYPE: tl.constexpr):  # fmt: skip
    """Steps ``first_step ..`` ``+ n_steps − 1`` on ``W`` (D, D) in place, their losses into ``loss_ptr``; ``consts``
    [−lr/B, 1/K, 1 − c, c]; ``PREDRAWN``: Gaussians ``z`` (steps, d, N+1, B), classes ``c`` (steps, N, B), strided."""
    # W by blocks split d | K | 1 (x, label, indicator); the label columns never change: neither loaded nor stored
    tl.static_assert(
        (LOSS == SQUARE) | (LOSS == CROSS_ENTROPY) | (LOSS == MIXTURE) | (LOSS == SQUENTROPY),
        "sgd_block_kernel: a loss code without a branch (loss_branch checks a run's loss first)",
    )
    D: tl.constexpr = d + K + 1
    alpha = tl.load(consts_ptr)  # −lr/B
    inv_K = tl.load(consts_ptr + 1)
    w_square = tl.load(consts_ptr + 2)
    w_ce = tl.load(consts_ptr + 3)
    x = tl.arange(0, XP)  # x coordinate
    k = tl.arange(0, KP)  # class, label coordinate
    is_x, is_label = x < d, k < K
    W_xx = tl.load(W_ptr + x[:, None] * D + x[None, :], mask=is_x[:, None] & is_x[None, :], other=0.0)  # (XP, XP)
    W_xi = tl.load(W_ptr + x * D + (D - 1), mask=is_x, other=0.0)  # (XP,)
    W_lx = tl.load(W_ptr + (d + k[:, None]) * D + x[None, :], mask=is_label[:, None] & is_x[None, :], other=0.0)
    W_li = tl.load(W_ptr + (d + k) * D + (D - 1), mask=is_label, other=0.0)  # (KP,)
    W_ix = tl.load(W_ptr + (D - 1) * D + x, mask=is_x, other=0.0)  # (XP,)
    W_ii = tl.load(W_ptr + (D - 1) * D + (D - 1))
    b_ = tl.arange(0, BC)  # prompt within the chunk
    j_ = tl.arange(0, NP)  # context token

    for i in range(n_steps):
        step = first_step + i
        # Σ_b r_b h_{N+1,b}ᵀ by blocks, and the chunk's minibatch losses
        G_xx = tl.zeros((XP, XP), DTYPE)
        G_xi = tl.zeros((XP,), DTYPE)
        G_lx = tl.zeros((KP, XP), DTYPE)
        G_li = tl.zeros((KP,), DTYPE)
        G_ix = tl.zeros((XP,), DTYPE)
        G_ii = tl.zeros((BC,), DTYPE)
        loss_sum = tl.zeros((BC,), DTYPE)
        for b0 in range(0, B, BC):
            ok = b0 + b_ < B  # a real prompt: (BC,)
            token = ok[:, None] & (j_[None, :] < N)  # a real context token: (BC, NP)
            if PREDRAWN:
                zc, zq, cls = load_chunk(
                    z_ptr, c_ptr, z_s0, z_s1, z_s2, z_s3, c_s0, c_s1, c_s2, step, b0, d, N, B, NP, XP, BC
                )
            else:
                zc, zq, cls = draw_chunk(key, step, b0, d, N, K, B, NP, XP, BC)
            # --- inputs on the sphere (zero at the padding) and the label codes u_{c_j} = e_{c_j} − 1/K ---
            xc = zc.to(DTYPE)
            sq = tl.sum(xc * xc, axis=2)
            xc = xc * (1.0 / tl.sqrt(tl.where(sq > 0, sq, 1.0)))[:, :, None]  # x_j: (BC, NP, XP)
            xq = zq.to(DTYPE)
            sq_q = tl.sum(xq * xq, axis=1)
            xq = xq * (1.0 / tl.sqrt(tl.where(sq_q > 0, sq_q, 1.0)))[:, None]  # x_{N+1}: (BC, XP)
            one_hot = (cls[:, :, None] == k[None, None, :]).to(DTYPE)
            U = tl.where(token[:, :, None] & is_label[None, None, :], one_hot - inv_K, 0.0)  # (BC, NP, KP)
            # --- the 1-NN target: the largest inner product with the query (the first, like argmax) ---
            inner = tl.where(token, tl.sum(xc * xq[:, None, :], axis=2), MINUS_INF)
            nn = tl.argmax(inner, axis=1, tie_break_left=True)
            c_star = tl.sum(tl.where(j_[None, :] == nn[:, None], cls, 0), axis=1)  # (BC,)
            is_star = is_label[None, :] & (k[None, :] == c_star[:, None])  # (BC, KP)
            # --- forward pass of the query column: v = W h_{N+1}, s_j = h_jᵀ v, q = softmax(s), ℓ ---
            v_x = tl.sum(W_xx[None, :, :] * xq[:, None, :], axis=2) + W_xi[None, :]  # (BC, XP)
            v_l = tl.sum(W_lx[None, :, :] * xq[:, None, :], axis=2) + W_li[None, :]  # (BC, KP)
            v_i = tl.sum(W_ix[None, :] * xq, axis=1) + W_ii  # (BC,)
            s = tl.sum(xc * v_x[:, None, :], axis=2) + tl.sum(U * v_l[:, None, :], axis=2)
            s = tl.where(token, s, MINUS_INF)  # (BC, NP)
            s_q = tl.sum(xq * v_x, axis=1) + v_i  # the query's own score: (BC,)
            top = tl.maximum(tl.max(s, axis=1), s_q)
            p = tl.exp(s - top[:, None])
            p_q = tl.exp(s_q - top)
            total = tl.sum(p, axis=1) + p_q
            q = p / total[:, None]
            q_q = p_q / total
            ell = tl.sum(U * q[:, :, None], axis=1)  # ℓ = Σ_j q_j u_{c_j}: (BC, KP)
            # --- the loss and g = ∂loss/∂ℓ (docs/method.md §2), zero at the padding ---
            g_square = tl.where(is_label[None, :], ell - (is_star.to(DTYPE) - inv_K), 0.0)
            if LOSS == SQUARE:
                g = g_square
                loss = 0.5 * tl.sum(g * g, axis=1)
            else:  # cross entropy, and the mixture's and squentropy's terms added to it
                masked = tl.where(is_label[None, :], ell, MINUS_INF)
                most = tl.max(masked, axis=1)
                log_total = tl.log(tl.sum(tl.exp(masked - most[:, None]), axis=1))
                log_p = ell - most[:, None] - log_total[:, None]
                loss = -tl.sum(tl.where(is_star, log_p, 0.0), axis=1)
                g = tl.where(is_label[None, :], tl.exp(log_p), 0.0) - is_star.to(DTYPE)
                if LOSS == MIXTURE:
                    loss = w_square * (0.5 * tl.sum(g_square * g_square, axis=1)) + w_ce * loss
                    g = w_square * g_square + w_ce * g
                elif LOSS == SQUENTROPY:
                    off = tl.where(is_label[None, :] & ~is_star, ell, 0.0)
                    loss = loss + tl.sum(off * off, axis=1) / (K - 1)
                    g = g + 2.0 * off / (K - 1)
            loss_sum += tl.where(ok, loss, 0.0)
            # --- backward: ∂loss/∂s_j = q_j (a_j − ⟨ℓ, g⟩), a_j = ⟨u_{c_j}, g⟩ (0 for the query) ---
            a = tl.sum(U * g[:, None, :], axis=2)  # (BC, NP)
            qa = q * a
            lg = tl.sum(qa, axis=1)  # ⟨ℓ, g⟩ = Σ_j q_j a_j
            ds = qa - q * lg[:, None]
            ds_q = -(q_q * lg)
            # r = Σ_j ∂loss/∂s_j h_j by blocks: x, label (the query's is 0), indicator (the query's alone)
            r_x = tl.sum(xc * ds[:, :, None], axis=1) + ds_q[:, None] * xq  # (BC, XP)
            r_l = tl.sum(U * ds[:, :, None], axis=1)  # (BC, KP)
            G_xx += tl.sum(r_x[:, :, None] * xq[:, None, :], axis=0)
            G_xi += tl.sum(r_x, axis=0)
            G_lx += tl.sum(r_l[:, :, None] * xq[:, None, :], axis=0)
            G_li += tl.sum(r_l, axis=0)
            G_ix += tl.sum(ds_q[:, None] * xq, axis=0)
            G_ii += tl.where(ok, ds_q, 0.0)
        # W −= lr · mean_b r_b h_{N+1,b}ᵀ, h_{N+1} = [x; 0; 1]
        W_xx += alpha * G_xx
        W_xi += alpha * G_xi
        W_lx += alpha * G_lx
        W_li += alpha * G_li
        W_ix += alpha * G_ix
        W_ii += alpha * tl.sum(G_ii, axis=0)
        tl.store(loss_ptr + i, tl.sum(loss_sum, axis=0) / B)
    tl.store(W_ptr + x[:, None] * D + x[None, :], W_xx, mask=is_x[:, None] & is_x[None, :])
    tl.store(W_ptr + x * D + (D - 1), W_xi, mask=is_x)
    tl.store(W_ptr + (d + k[:, None]) * D + x[None, :], W_lx, mask=is_label[:, None] & is_x[None, :])
    tl.store(W_ptr + (d + k) * D + (D - 1), W_li, mask=is_label)
    tl.store(W_ptr + (D - 1) * D + x, W_ix, mask=is_x)
    tl.store(W_ptr + (D - 1) * D + (D - 1), W_ii)


def tile_sizes(d: int, N: int, K: int) -> dict[str, int]:
    """The kernel's padded tiles: tokens ``NP``, x coordinates ``XP`` (powers of two, at least 4), classes ``KP``."""
    return {"NP": max(4, next_power_of_2(N)), "XP": max(4, next_power_of_2(d)), "KP": next_power_of_2(K)}


def auto_chunk(d: int, N: int, K: int, batch: int, dtype: torch.dtype, num_warps: int) -> int:
    """Prompts a pass: the most (a power of two, at most the batch's) whose largest tile leaves ``PER_THREAD[dtype]``
    elements to each thread; ptxas then needs no spills (checked for sm_90)."""
    t = tile_sizes(d, N, K)
    fit = PER_THREAD[dtype] * 32 * num_warps // (t["NP"] * max(t["XP"], t["KP"]))
    return max(1, min(1 << max(0, fit.bit_length() - 1), next_power_of_2(batch)))


class GpuEngine:
    """SGD for one run with the kernel, the interface of ``onenn.training.cpu.Engine`` (``K``: the label width)."""

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
        key: int,
        block: int = BLOCK_STEPS,
        chunk: int | None = None,
        num_warps: int = NUM_WARPS,
        minibatches: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> None:
        self.loss_code = loss_branch(loss.name)  # first: a loss the kernel lacks is refused on any machine
        D, T = d + K + 1, N + 1
        if W.shape != (D, D):
            raise ValueError(f"W must be (D, D) = ({D}, {D}) for d={d}, K={K}; got {tuple(W.shape)}")
        if W.dtype not in TL_DTYPES or not W.is_contiguous():
            raise ValueError(f"W must be a contiguous float32 or float64 tensor; got {W.dtype}, strides {W.stride()}")
        if W.device.type != "cuda" and not interpreting():
            raise RuntimeError(
                f"the GPU engine runs on a CUDA device; W is on {W.device} (CPU tensors only under Triton's "
                "interpreter, TRITON_INTERPRET=1, as in the tests); on the CPU use the engine 'cpu'"
            )
        check_minibatch(d, N, batch)
        if not 0 <= key < 2**63:
            raise ValueError(f"key must lie in 0..2**63-1 (onenn.maths.stream.stream_key); got {key}")
        if block < 1:
            raise ValueError(f"block must be at least 1; got {block}")
        self.W, self.d, self.N, self.K, self.B = W, d, N, K, batch
        self.loss, self.key, self.block, self.num_warps = loss, key, block, num_warps
        auto = auto_chunk(d, N, K, batch, W.dtype, num_warps)
        self.chunk = auto if chunk is None else min(next_power_of_2(chunk), next_power_of_2(batch))
        self.step = 0  # the next step's number in the run's stream
        dev = W.device
        # constants in the training precision (a Python float reaches a Triton kernel as float32)
        consts = [-torch.tensor(lr, dtype=W.dtype).item() / batch, 1.0 / K, 1.0 - loss.c, loss.c]
        self.consts = torch.tensor(consts, dtype=W.dtype, device=dev)
        self.predrawn = minibatches is not None
        unused = torch.zeros(1, dtype=torch.float32, device=dev), torch.zeros(1, dtype=torch.int64, device=dev)
        Z, C = self.Z, self.C = minibatches if self.predrawn else unused
        if self.predrawn and (Z.shape[1:] != (d, T, batch) or C.shape[1:] != (N, batch) or len(Z) != len(C)):
            raise ValueError(
                f"minibatches must be Z (steps, {d}, {T}, {batch}) and C (steps, {N}, {batch}); "
                f"got {tuple(Z.shape)} and {tuple(C.shape)}"
            )

    def run(
        self, steps: int, saved_steps: list[int] | None = None, progress: Progress | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """As ``Engine.run``; ``progress`` is called after every launch with its last loss as a 0-d tensor."""
        if self.predrawn and self.step + steps > len(self.Z):
            raise ValueError(f"minibatches hold {len(self.Z)} steps; the run needs {self.step + steps}")
        new = lambda *shape: torch.empty(shape, dtype=self.W.dtype, device=self.W.device)
        return run_pieces(self.W, steps, saved_steps, lambda t: t + self.block, self.advance, progress, new)

    def advance(self, t: int, stop: int, losses: torch.Tensor) -> bool:
        """Steps ``t..stop-1`` in one launch (``run_pieces``): progress after every launch."""
        self.launch(stop - t, losses[t:stop])
        return True

    def launch(self, n: int, losses: torch.Tensor) -> None:
        """The next ``n`` steps in one launch, their losses into ``losses`` (``run`` checks the arguments)."""
        strides = (*self.Z.stride(), *self.C.stride()) if self.predrawn else (0,) * 7
        sgd_block_kernel[(1,)](
            self.W, losses, self.consts, self.key, self.Z, self.C, *strides, self.step, n,
            d=self.d, N=self.N, K=self.K, B=self.B, **tile_sizes(self.d, self.N, self.K), BC=self.chunk,
            LOSS=self.loss_code, PREDRAWN=self.predrawn, DTYPE=TL_DTYPES[self.W.dtype], num_warps=self.num_warps,
        )  # fmt: skip
        self.step += n
