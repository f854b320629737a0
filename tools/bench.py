"""Benchmark of the CPU engine, side by side: ``python -m tools.bench`` (``--help`` for the options).

µs per step (one thread, process CPU, median of interleaved repetitions) of the engine, of the floor (the draws
alone; binary: the fixed set's source) and of the engine's parts. The GPU engine: tests/gpu/check.sh."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

import numba
import numpy as np

from onenn.base.io import write_with
from onenn.base.provenance import processors
from onenn.maths.prompts import make_binary_set
from onenn.maths.stream import stream_key
from onenn.training import cpu_stream
from onenn.training.binary import BinarySettings, FixedSetSGD
from onenn.training.train import TrainSettings, make_engine

#: the paper's defaults, then longer contexts and more classes; and the binary experiment's defaults
CONFIGS = {"defaults": {}, "N=32": {"N": 32}, "N=64": {"N": 64}, "K=10": {"K": 10}, "binary": None}


def interleaved_medians(runs: dict[str, tuple[Callable[[], object], int]], reps: int) -> dict[str, float]:
    """Median CPU seconds per step of each run (name → the run and its steps), timed in turn ``reps`` times."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, (run, n) in runs.items():
            start = time.process_time()
            run()
            times[name].append((time.process_time() - start) / n)
    return {name: statistics.median(t) for name, t in times.items()}


def time_config(s: TrainSettings, steps: int, reps: int) -> dict[str, float]:
    """The engine, the floor and the engine's parts of a multiclass configuration."""
    engine = make_engine(s, "cpu")
    z = np.empty((1, s.d, s.N + 1, s.batch), np.float32)
    c = np.empty((1, s.N, s.batch), np.int64)
    key, blocks = stream_key(s.seed, "minibatches"), max(1, steps // engine.S)

    def floor() -> None:
        for t in range(steps):
            cpu_stream.draw_block(z, c, key, t, 1, s.K, s.d)

    def prepare() -> None:
        for _ in range(blocks):
            engine.prepare_block(engine.S)

    def update() -> None:
        for _ in range(blocks):
            engine.sgd_steps(0, engine.S)

    engine.run(steps)  # compiled (or loaded from the cache) before timing
    runs = {"engine": (lambda: engine.run(steps), steps), "floor": (floor, steps)}
    runs |= {"prepare": (prepare, blocks * engine.S), "update": (update, blocks * engine.S)}
    return interleaved_medians(runs, reps)


def time_binary(s: BinarySettings, steps: int, reps: int) -> dict[str, float]:
    """The same for the binary experiment, in whole epochs; the floor is the source alone (there is nothing to draw)."""
    sgd = FixedSetSGD(s, make_binary_set("train", s.train_size, s.d, s.N, s.labels, None, seed=s.seed))
    epochs = max(1, steps // sgd.steps_per_epoch)
    full = sgd.engines[0][0]
    blocks = max(1, epochs * sgd.engines[0][1] // full.S)

    def source() -> None:
        for _ in range(epochs):
            for engine, n in sgd.engines:
                for start in range(0, n, engine.S):
                    engine.prepare_block(min(engine.S, n - start))

    def update() -> None:
        for _ in range(blocks):
            full.sgd_steps(0, full.S)

    sgd.run(epochs)
    n = epochs * sgd.steps_per_epoch
    medians = interleaved_medians(
        {"engine": (lambda: sgd.run(epochs), n), "floor": (source, n), "update": (update, blocks * full.S)}, reps
    )
    return {**medians, "prepare": medians["floor"]}


def table(rows: list[dict], note: str) -> str:
    lines = ["# CPU engine benchmark (`python -m tools.bench`)", "", note, ""]
    lines.append("| config | d | N | K | batch | engine µs | floor µs | engine/floor | engine µs/(N+1) |")
    lines.append("|---" * 9 + "|")
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['d']} | {r['N']} | {r['K']} | {r['batch']} | {r['engine'] * 1e6:.1f} "
            f"| {r['floor'] * 1e6:.1f} | {r['engine'] / r['floor']:.2f} | {r['engine'] * 1e6 / (r['N'] + 1):.2f} |"
        )
    lines += ["", "Where the engine's time goes (µs per step):", ""]
    lines += ["| config | draws (floor) | per-block preparation | SGD step | rest (loop, saving W) |", "|---" * 5 + "|"]
    for r in rows:
        us = {k: r[k] * 1e6 for k in ("engine", "floor", "prepare", "update")}
        lines.append(
            f"| {r['config']} | {us['floor']:.1f} | {us['prepare'] - us['floor']:.1f} | {us['update']:.1f} "
            f"| {us['engine'] - us['prepare'] - us['update']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"], help="training precision")
    parser.add_argument("--steps", type=int, default=1024, help="steps per repetition")
    parser.add_argument("--reps", type=int, default=7, help="interleaved repetitions (the median is reported)")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--output", default="benchmarks/engine.md", help="where the table is written")
    args = parser.parse_args(argv)
    numba.set_num_threads(1)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = []
    for name in args.configs:
        if CONFIGS[name] is None:
            s = BinarySettings(dtype=args.dtype)
            timed, K = time_binary(s, args.steps, args.reps), 1
        else:
            s = replace(TrainSettings(device="cpu", dtype=args.dtype), **CONFIGS[name])
            timed, K = time_config(s, args.steps, args.reps), s.K
        rows.append({"config": name, "d": s.d, "N": s.N, "K": K, "batch": s.batch, **timed})
    note = (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {processors()}, Python {platform.python_version()}; {args.dtype}, "
        f"1 thread; process CPU time, median of {args.reps} interleaved repetitions of {args.steps} steps; load "
        f"average {load:.2f} at the start. floor: the step's draws alone (binary: the fixed set's source alone)."
    )
    text = table(rows, note)
    print(text, end="")
    write_with(args.output, lambda tmp: tmp.write_text(text))
    print(f"written to {args.output}")
    return text


if __name__ == "__main__":
    main()
