"""Benchmark of the random stream (docs/method.md §4.4) against torch's CPU generator: ``python -m tools.bench_stream``.

Per minibatch of a configuration, on one thread, in one run on one machine, ns per number:

- **stream normals**: the Gaussians of a step drawn by the compiled stream (``onenn.training.philox.draw_gaussians``);
- **torch normal_**: torch's float32 ``normal_`` drawing the same count;
- **stream step**: the step's Gaussians and classes from the stream (``draw_minibatch``);
- **torch step**: as many numbers as the training engine drew before the counter-based stream (``normal_``, then
  ``random_`` for the classes; ``tools.bench.torch_floor_step``), per Gaussian: the engine's old floor.

They are timed in interleaved repetitions and the median is reported (``tools.bench.interleaved_medians``), so a slow
spell of a shared machine hits them alike; the ratios are the numbers to read. The clock is the process's CPU time.
The table is printed with the load average before and after, and written to ``--output`` if given.
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np
import torch

from onenn.base.io import write_with
from onenn.maths.stream import stream_key
from onenn.training import philox
from tools.bench import interleaved_medians, machine

#: the paper's defaults, then longer contexts
CONFIGS = {"defaults": (8, 16, 3, 128), "N=32": (8, 32, 3, 128), "N=64": (8, 64, 3, 128)}


def time_config(d: int, N: int, K: int, batch: int, *, steps: int, reps: int) -> dict[str, float]:
    """Median seconds per step of each of the four draws (``__doc__``)."""
    z = np.empty((d, N + 1, batch), dtype=np.float32)
    classes = np.empty((N, batch), dtype=np.int64)
    z_torch = torch.empty(d, N + 1, batch, dtype=torch.float32)
    classes_torch = torch.empty(N, batch, dtype=torch.long)
    generator = torch.Generator().manual_seed(1)
    key = stream_key(0, "minibatches")
    philox.draw_minibatch(z, classes, key, 0, K)  # compiled (or loaded from the cache) before timing

    def stream_normals() -> None:
        for t in range(steps):
            philox.draw_gaussians(z, key, t)

    def torch_normals() -> None:
        for _ in range(steps):
            z_torch.normal_(generator=generator)

    def stream_step() -> None:
        for t in range(steps):
            philox.draw_minibatch(z, classes, key, t, K)

    def torch_step() -> None:
        for _ in range(steps):
            z_torch.normal_(generator=generator)
            classes_torch.random_(0, K, generator=generator)

    runs = {
        "stream normals": (stream_normals, steps),
        "torch normal_": (torch_normals, steps),
        "stream step": (stream_step, steps),
        "torch step": (torch_step, steps),
    }
    return interleaved_medians(time.process_time, runs, reps)


def table(rows: list[dict], header: list[str]) -> str:
    lines = [
        *header,
        "",
        (
            "| config | Gaussians a step | stream normals ns | torch normal_ ns | ratio | stream step ns "
            "| torch step ns | ratio |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ns = {k: r[k] / r["count"] * 1e9 for k in ("stream normals", "torch normal_", "stream step", "torch step")}
        lines.append(
            f"| {r['config']} | {r['count']} | {ns['stream normals']:.2f} | {ns['torch normal_']:.2f} "
            f"| {ns['stream normals'] / ns['torch normal_']:.2f} | {ns['stream step']:.2f} | {ns['torch step']:.2f} "
            f"| {ns['stream step'] / ns['torch step']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m tools.bench_stream", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=500, help="minibatches per repetition")
    parser.add_argument("--reps", type=int, default=7, help="interleaved repetitions (the median is reported)")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--output", default=None, help="where the table is written (default: printed only)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    numba.set_num_threads(1)
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = []
    for name in args.configs:
        d, N, K, batch = CONFIGS[name]
        times = time_config(d, N, K, batch, steps=args.steps, reps=args.reps)
        rows.append({"config": name, "count": d * (N + 1) * batch, **times})
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    header = [
        "# The random stream against torch's generator",
        "",
        (
            f"`python -m tools.bench_stream` on {machine()}; 1 thread; process CPU time, median of {args.reps} "
            f"interleaved repetitions of {args.steps} minibatches; ns per Gaussian; load average {load_before:.2f} "
            f"before, {load_after:.2f} after. The step columns add the classes (N a prompt) to the Gaussians."
        ),
    ]
    text = table(rows, header)
    print(text, end="")
    if args.output:
        write_with(args.output, lambda tmp: tmp.write_text(text))
    return text


if __name__ == "__main__":
    main()
