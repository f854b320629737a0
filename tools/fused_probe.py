"""Probes of the fused CUDA engine for developers (not used by the product):

- ``draw_stream``: the minibatches the training kernel draws inside itself (``onenn.training.fused.draw_chunk``),
  written out, so that the tests can hold them to the stream of docs/method.md §4.4 (``onenn.maths.stream.minibatch``)
  and train the kernel on exactly those numbers;
- ``compile_ahead``: the training kernel compiled for a CUDA architecture without a GPU, with the compiler and
  ptxas that triton ships, and what ptxas reports a thread uses.

    python -m tools.fused_probe          # registers and spills of every loss, both precisions, at the defaults
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import torch
import triton
import triton.language as tl

from onenn.base.io import write_with
from onenn.maths.losses import LOSSES
from onenn.training.fused import (
    NUM_WARPS,
    TL_DTYPES,
    auto_chunk,
    draw_chunk,
    interpreting,
    loss_branch,
    sgd_block_kernel,
    tile_sizes,
)


@triton.jit
def stream_kernel(
    z_ptr,  # (steps, d, N+1, B) float32: the Gaussians, in Engine's layout
    c_ptr,  # (steps, N, B) int64: the classes
    key,
    first_step,
    n_steps,
    d: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    B: tl.constexpr,
    NP: tl.constexpr,
    XP: tl.constexpr,
    BC: tl.constexpr,
):
    """The training stream alone: what ``sgd_block_kernel`` draws at steps ``first_step ..``, written out."""
    T: tl.constexpr = N + 1
    k = tl.arange(0, XP)
    j = tl.arange(0, NP)
    for i in range(n_steps):
        z_step = z_ptr + i * (d * T * B)
        for b0 in range(0, B, BC):
            zc, zq, cls = draw_chunk(key, first_step + i, b0, d, N, K, B, NP, XP, BC)
            b = b0 + tl.arange(0, BC)
            ok = b[:, None] < B
            token = ok & (j[None, :] < N)
            k3, j3, b3 = k[None, None, :], j[None, :, None], b[:, None, None]
            tl.store(z_step + (k3 * T + j3) * B + b3, zc, mask=token[:, :, None] & (k3 < d))
            tl.store(z_step + (k[None, :] * T + N) * B + b[:, None], zq, mask=ok & (k[None, :] < d))
            tl.store(c_ptr + i * (N * B) + j[None, :] * B + b[:, None], cls.to(tl.int64), mask=token)


def draw_stream(
    key: int, first_step: int, steps: int, *, d: int, N: int, K: int, batch: int, device: torch.device | str
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fused engine's minibatches of steps ``first_step ..`` of the stream with the Philox key ``key``
    (``onenn.maths.stream.stream_key(seed, "minibatches")`` for a run's), in the layout of
    ``onenn.training.sources.draw_step``: Gaussians ``Z`` (steps, d, N+1, B) float32 and classes ``C`` (steps, N,
    B) int64. The same numbers as the training kernel draws, by the same code."""
    Z = torch.zeros(steps, d, N + 1, batch, dtype=torch.float32, device=device)
    C = torch.zeros(steps, N, batch, dtype=torch.int64, device=device)
    t = tile_sizes(d, N, K)
    chunk = auto_chunk(d, N, K, batch, torch.float32, NUM_WARPS)
    stream_kernel[(1,)](
        Z, C, key, first_step, steps, d=d, N=N, K=K, B=batch, NP=t["NP"], XP=t["XP"], BC=chunk, num_warps=NUM_WARPS
    )
    return Z, C


def compile_ahead(
    *,
    d: int,
    N: int,
    K: int,
    batch: int,
    dtype: torch.dtype,
    loss: str,
    predrawn: bool = False,
    num_warps: int = NUM_WARPS,
    arch: int = 90,
) -> dict[str, int]:
    """Compile the training kernel for a CUDA architecture (``arch`` 90: H100/H200) without a GPU, with the
    compiler and ptxas that triton ships, and return what ``ptxas -v`` reports a thread uses: ``registers`` and
    ``spill_bytes``. Not under the interpreter (it needs the compiled kernel, ``TRITON_INTERPRET=0``)."""
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import get_ptxas
    from triton.compiler import ASTSource

    if interpreting():
        raise RuntimeError("compile_ahead needs triton imported with TRITON_INTERPRET=0")
    ft = {torch.float32: "fp32", torch.float64: "fp64"}[dtype]
    ints = ("z_s0", "z_s1", "z_s2", "z_s3", "c_s0", "c_s1", "c_s2", "first_step", "n_steps")
    constexprs = {
        "d": d,
        "N": N,
        "K": K,
        "B": batch,
        **tile_sizes(d, N, K),
        "BC": auto_chunk(d, N, K, batch, dtype, num_warps),
        "LOSS": loss_branch(loss),
        "PREDRAWN": predrawn,
        "DTYPE": TL_DTYPES[dtype],
    }
    signature = {"W_ptr": f"*{ft}", "loss_ptr": f"*{ft}", "consts_ptr": f"*{ft}", "z_ptr": "*fp32", "c_ptr": "*i64"}
    signature |= {"key": "i64"}  # a stream key (onenn.maths.stream.stream_key) has its purpose in its top bits
    signature |= {name: "i32" for name in ints} | {name: "constexpr" for name in constexprs}
    signature = {name: signature[name] for name in sgd_block_kernel.arg_names}
    source = ASTSource(fn=sgd_block_kernel, signature=signature, constexprs=constexprs)
    kernel = triton.compile(source, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps})
    ptx = kernel.asm["ptx"]
    target = re.search(r"^\.target (\S+)", ptx, re.MULTILINE)[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.ptx"
        write_with(path, lambda tmp_path: tmp_path.write_text(ptx))
        ptxas = [get_ptxas(arch).path, f"-arch={target}", "-v", str(path), "-o", os.devnull]
        report = subprocess.run(ptxas, capture_output=True, text=True, check=True).stderr
    return {
        "registers": int(re.search(r"Used (\d+) registers", report)[1]),
        "spill_bytes": int(re.search(r"(\d+) bytes spill stores", report)[1]),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--d", type=int, default=8)
    parser.add_argument("--N", type=int, default=16)
    parser.add_argument("--K", type=int, default=3)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args(argv)
    print(f"{'loss':15s} {'dtype':8s} {'registers':>9s} {'spill bytes':>11s}")
    for dtype in (torch.float32, torch.float64):
        for loss in LOSSES:
            report = compile_ahead(d=args.d, N=args.N, K=args.K, batch=args.batch, dtype=dtype, loss=loss)
            print(f"{loss:15s} {str(dtype)[6:]:8s} {report['registers']:9d} {report['spill_bytes']:11d}")


if __name__ == "__main__":
    main()
