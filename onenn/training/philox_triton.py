"""The random stream of docs/method.md §4.4 in Triton: ``stream_offset`` lays out the counter as ``onenn.maths.stream.counter``
does, and Triton's own ``tl.randint4x`` and ``tl.randn4x`` draw from it, so a kernel that calls them with the stream's
key gets the words of the reference ``onenn.maths.stream`` bit for bit (the normals, through the device's ``log``, ``cos``
and ``sin``, within a few ulps). ``minibatch_kernel`` draws a multiclass minibatch in the engine's layout, as
``onenn.maths.stream.minibatch``; ``words_kernel`` the words of given counters. On a CPU tensor they run only in Triton's
interpreter (``TRITON_INTERPRET=1`` before triton is imported), which is how the tests run them without a GPU.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

#: onenn.maths.stream's counter fields (their shifts) and kinds
TOKEN_SHIFT: tl.constexpr = tl.constexpr(8)
KIND_SHIFT: tl.constexpr = tl.constexpr(19)
PROMPT_SHIFT: tl.constexpr = tl.constexpr(20)
STEP_SHIFT: tl.constexpr = tl.constexpr(40)
KIND_GAUSSIAN: tl.constexpr = tl.constexpr(0)
KIND_INTEGERS: tl.constexpr = tl.constexpr(1)


@triton.jit
def stream_offset(step, prompt, kind, token, group):
    """The 64-bit counter ``t·2⁴⁰ + b·2²⁰ + kind·2¹⁹ + j·2⁸ + m`` (int64) that ``tl.randint4x`` and ``tl.randn4x``
    take as their offset: its low word is the Philox counter's ``c0``, its high word ``c1``."""
    t = tl.to_tensor(step).to(tl.int64) << STEP_SHIFT
    b = tl.to_tensor(prompt).to(tl.int64) << PROMPT_SHIFT
    j = tl.to_tensor(token).to(tl.int64) << TOKEN_SHIFT
    return t + b + (kind << KIND_SHIFT) + j + tl.to_tensor(group).to(tl.int64)


@triton.jit
def words_kernel(out_ptr, key, offsets_ptr, n, BLOCK: tl.constexpr):
    """``tl.randint4x(key, offset)`` of ``n`` int64 offsets, into ``out`` (4, n) int64 (the uint32 words)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < n
    offset = tl.load(offsets_ptr + i, mask=ok, other=0)
    w0, w1, w2, w3 = tl.randint4x(key, offset)
    tl.store(out_ptr + i, w0.to(tl.int64), mask=ok)
    tl.store(out_ptr + n + i, w1.to(tl.int64), mask=ok)
    tl.store(out_ptr + 2 * n + i, w2.to(tl.int64), mask=ok)
    tl.store(out_ptr + 3 * n + i, w3.to(tl.int64), mask=ok)


@triton.jit
def minibatch_kernel(
    z_ptr,  # (d, N+1, B) float32
    c_ptr,  # (N, B) int64
    key,
    step,
    d: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    B: tl.constexpr,
    BB: tl.constexpr,
):
    """Step ``step``'s draws of a multiclass minibatch (onenn.maths.stream.minibatch), prompts ``BB`` a program."""
    T: tl.constexpr = N + 1
    b = tl.program_id(0) * BB + tl.arange(0, BB)
    ok = b < B
    for j in range(T):
        for m in range((d + 3) // 4):
            z0, z1, z2, z3 = tl.randn4x(key, stream_offset(step, b, KIND_GAUSSIAN, j, m))
            k = 4 * m
            tl.store(z_ptr + (k * T + j) * B + b, z0, mask=ok)
            tl.store(z_ptr + ((k + 1) * T + j) * B + b, z1, mask=ok & (k + 1 < d))
            tl.store(z_ptr + ((k + 2) * T + j) * B + b, z2, mask=ok & (k + 2 < d))
            tl.store(z_ptr + ((k + 3) * T + j) * B + b, z3, mask=ok & (k + 3 < d))
    for g in range((N + 3) // 4):
        w0, w1, w2, w3 = tl.randint4x(key, stream_offset(step, b, KIND_INTEGERS, g, 0))
        j = 4 * g
        tl.store(c_ptr + j * B + b, (w0.to(tl.int64) * K) >> 32, mask=ok)  # ⌊K·w / 2³²⌋
        tl.store(c_ptr + (j + 1) * B + b, (w1.to(tl.int64) * K) >> 32, mask=ok & (j + 1 < N))
        tl.store(c_ptr + (j + 2) * B + b, (w2.to(tl.int64) * K) >> 32, mask=ok & (j + 2 < N))
        tl.store(c_ptr + (j + 3) * B + b, (w3.to(tl.int64) * K) >> 32, mask=ok & (j + 3 < N))


def words(key: int, offsets: torch.Tensor, block: int = 128) -> torch.Tensor:
    """``tl.randint4x(key, offsets)``: (4, n) int64 holding the uint32 words; ``offsets`` (n,) int64 on the kernel's
    device (the counters, below 2⁶³)."""
    n = offsets.shape[0]
    out = torch.empty(4, n, dtype=torch.int64, device=offsets.device)
    words_kernel[(triton.cdiv(n, block),)](out, key, offsets, n, BLOCK=block)
    return out


def minibatch(
    key: int, step: int, d: int, N: int, K: int, batch: int, device: torch.device, block: int = 32
) -> tuple[torch.Tensor, torch.Tensor]:
    """Step ``step``'s Gaussians (d, N+1, B) float32 and classes (N, B) int64 on ``device``, drawn by
    ``minibatch_kernel`` (``block`` prompts a program)."""
    z = torch.empty(d, N + 1, batch, dtype=torch.float32, device=device)
    c = torch.empty(N, batch, dtype=torch.int64, device=device)
    minibatch_kernel[(triton.cdiv(batch, block),)](z, c, key, step, d=d, N=N, K=K, B=batch, BB=block)
    return z, c
