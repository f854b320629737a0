"""Benchmark of the training engine, side by side: ``python -m tools.bench`` (``--help`` for the options).

Per seed-step, on one thread, in one run on one machine:

- **engine**: a step of the training engine ``onenn.training.engine.Engine`` (drawing the minibatch included; the fused
  CUDA kernel is timed by the GPU check, ``tools.gpu_check``), with its compiled CPU kernels
  (``onenn.training.kernels``);
- **torch passes**: the same engine without them, its torch operations alone (``make_engine(…, "torch")``);
- **baseline**: the autograd baseline ``onenn.training.baseline`` (full attention matrix, ``loss.backward()``,
  ``torch.optim.SGD``) on the same minibatches;
- **floor**: drawing the step's random numbers alone from the run's stream, as the engine draws them
  (``onenn.training.philox.draw_minibatch``: the new floor);
- **torch floor**: torch's float32 ``normal_`` and ``random_`` drawing the same count from a CPU generator, the
  engine's draws before the counter-based stream (the old floor, kept as the yardstick: the engine's time over it);
- the engine's parts, for a profile: the per-block preparation (draws included) and the SGD step alone.

The row ``binary`` is the binary experiment at its defaults (label width 1, a fixed set of 10 000 prompts,
reshuffled every epoch): the engine with its ``FixedSet`` source (``onenn.training.binary.FixedSetSGD``), the
reference loop over ``onenn.maths.model`` and ``onenn.maths.gradient`` that it replaced in the baseline's column
(``onenn.training.baseline.BinaryReference``), and as the floor the source alone, permuting the set and gathering
each step's minibatch (there is nothing to draw); whole epochs, the remainder minibatch included.

The three are timed in interleaved repetitions and the median is reported, so a slow spell of a shared
machine hits all three alike. The default clock is the process's CPU time (on CUDA: wall time after a
synchronisation). Before timing, the engine and the baseline are checked to give the same weights, in
float64, over ``--check-steps`` steps. The table is printed and written to ``--output``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import torch

from onenn.base.io import write_with
from onenn.base.provenance import processors
from onenn.maths.prompts import make_binary_set
from onenn.maths.stream import stream_key
from onenn.training.baseline import Baseline, BinaryReference, train_baseline, train_binary_reference
from onenn.training.binary import BinarySettings, FixedSetSGD, train_binary
from onenn.training.run_setup import TrainSettings, make_engine
from onenn.training.sources import draw_step
from onenn.training.train import train

#: the paper's defaults, then longer contexts and more classes; and the binary experiment's defaults
CONFIGS = {"defaults": {}, "N=32": {"N": 32}, "N=64": {"N": 64}, "K=10": {"K": 10}, "binary": None}


def clock(name: str, device: torch.device) -> Callable[[], float]:
    """Seconds: the process's CPU time (robust on a shared machine) or wall time; on CUDA always wall time
    after the queued work has finished."""
    if device.type == "cuda":
        return lambda: (torch.cuda.synchronize(device), time.perf_counter())[1]
    return time.process_time if name == "cpu" else time.perf_counter


def floor_step(settings: TrainSettings, device: torch.device) -> Callable[[int], None]:
    """Draw step ``t``'s random numbers exactly as the engine does, into buffers allocated once."""
    s = settings
    z = torch.empty(s.d, s.N + 1, s.batch, dtype=torch.float32, device=device)
    classes = torch.empty(s.N, s.batch, dtype=torch.long, device=device)
    key = stream_key(s.seed, "minibatches")
    if device.type == "cpu":
        from onenn.training.philox import draw_minibatch

        z_array, classes_array = z.numpy(), classes.numpy()
        return lambda t: draw_minibatch(z_array, classes_array, key, t, s.K)
    return lambda t: draw_step(z, classes, s.K, key, t)


def torch_floor_step(settings: TrainSettings, device: torch.device) -> Callable[[], None]:
    """One step's count of numbers from torch's generator: float32 ``normal_`` for the Gaussians, ``random_`` for
    the classes (the engine's draws before the counter-based stream)."""
    s = settings
    z = torch.empty(s.d, s.N + 1, s.batch, dtype=torch.float32, device=device)
    classes = torch.empty(s.N, s.batch, dtype=torch.long, device=device)
    generator = torch.Generator(device=device).manual_seed(s.seed)

    def draw() -> None:
        z.normal_(generator=generator)
        classes.random_(0, s.K, generator=generator)

    return draw


def interleaved_medians(now: Callable[[], float], runs: dict[str, tuple[Callable[[], object], int]], reps: int) -> dict:
    """Median seconds per step of each of ``runs`` (name → the run and the steps it takes), timed one after the other
    in ``reps`` repetitions, so that a slow spell of a shared machine hits them all alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, (run, n) in runs.items():
            start = now()
            run()
            times[name].append((now() - start) / n)
    return {name: statistics.median(t) for name, t in times.items()}


def max_weight_difference(settings: TrainSettings, steps: int) -> float:
    """max |W_engine − W_baseline| over the saved steps of a run of ``steps`` steps."""
    s = replace(settings, steps=steps, n_eval=min(8, steps + 1))
    return float(np.abs(train(s, "compiled")["W"] - train_baseline(s)["W"]).max())


def time_config(settings: TrainSettings, *, steps: int, baseline_steps: int, reps: int, clock_name: str) -> dict:
    """Median seconds per step of the engine, the baseline and the floor, timed in interleaved repetitions."""
    engine, baseline = make_engine(settings, "compiled"), Baseline(settings)
    torch_engine = make_engine(settings, "torch")
    device = engine.W.device
    now, floor, torch_floor = (
        clock(clock_name, device),
        floor_step(settings, device),
        torch_floor_step(settings, device),
    )

    def floor_run() -> None:
        for t in range(steps):
            floor(t)

    def torch_floor_run() -> None:
        for _ in range(steps):
            torch_floor()

    def baseline_run() -> None:
        for _ in range(baseline_steps):
            baseline.step()

    blocks = max(1, steps // engine.S)

    def prepare_run() -> None:  # the per-block work, draws included
        for _ in range(blocks):
            engine.prepare_block(engine.S)

    def update_run() -> None:  # the SGD steps alone, on one prepared block
        for _ in range(blocks):
            engine.sgd_steps(0, engine.S)

    engine.run(steps)  # warm-up
    torch_engine.run(steps)
    baseline_run()
    runs = {
        "engine": (lambda: engine.run(steps), steps),
        "torch": (lambda: torch_engine.run(steps), steps),
        "baseline": (baseline_run, baseline_steps),
        "floor": (floor_run, steps),
        "torch floor": (torch_floor_run, steps),
        "prepare": (prepare_run, blocks * engine.S),
        "update": (update_run, blocks * engine.S),
    }
    return interleaved_medians(now, runs, reps)


def binary_training_set(s: BinarySettings) -> dict[str, np.ndarray]:
    return make_binary_set("train", s.train_size, s.d, s.N, s.labels, None, seed=s.seed)


def max_binary_weight_difference(settings: BinarySettings, steps: int) -> float:
    """max |W_engine − W_reference| over the saved steps of about ``steps`` steps on a set of 1 000 prompts (its
    epochs end with a remainder minibatch)."""
    s = replace(settings, train_size=1000)
    s = replace(s, epochs=max(1, steps // s.steps_per_epoch), n_eval=8)
    train_set = binary_training_set(s)
    return float(np.abs(train_binary(s, train_set)["W"] - train_binary_reference(s, train_set)["W"]).max())


def time_binary(settings: BinarySettings, *, steps: int, baseline_steps: int, reps: int, clock_name: str) -> dict:
    """As ``time_config`` for the binary experiment, in whole epochs: the engine (``FixedSetSGD``), the reference
    loop in the baseline's place, and the ``FixedSet`` source alone as the floor."""
    train_set = binary_training_set(settings)
    sgd, reference = FixedSetSGD(settings, train_set), BinaryReference(settings, train_set)
    torch_sgd = FixedSetSGD(settings, train_set, compiled=False)
    per_epoch = sgd.steps_per_epoch
    epochs, baseline_epochs = max(1, steps // per_epoch), max(1, baseline_steps // per_epoch)
    full, full_steps = sgd.engines[0]
    now = clock(clock_name, sgd.W.device)

    def source_run() -> None:  # whole epochs of the source: the pass stays aligned with the epochs
        for _ in range(epochs):
            for engine, n in sgd.engines:
                for start in range(0, n, engine.S):
                    engine.prepare_block(min(engine.S, n - start))

    def baseline_run() -> None:
        for _ in range(baseline_epochs):
            reference.epoch()

    blocks = max(1, epochs * full_steps // full.S)

    def update_run() -> None:  # the SGD steps alone, on one prepared block of full minibatches
        for _ in range(blocks):
            full.sgd_steps(0, full.S)

    sgd.run(epochs)  # warm-up
    torch_sgd.run(epochs)
    baseline_run()
    runs = {
        "engine": (lambda: sgd.run(epochs), epochs * per_epoch),
        "torch": (lambda: torch_sgd.run(epochs), epochs * per_epoch),
        "baseline": (baseline_run, baseline_epochs * per_epoch),
        "floor": (source_run, epochs * per_epoch),
        "update": (update_run, blocks * full.S),
    }
    medians = interleaved_medians(now, runs, reps)
    # the source is the whole per-block preparation; there is nothing to draw from torch
    return {**medians, "prepare": medians["floor"], "torch floor": float("nan")}


def machine() -> str:
    return f"{processors()}, torch {torch.__version__}, {platform.python_version()}"


def table(rows: list[dict], header: list[str]) -> str:
    lines = header + [
        "",
        (
            "| config | d | N | K | batch | engine µs | torch passes µs | baseline µs | floor µs | torch floor µs "
            "| engine/baseline | engine/floor | engine/torch floor | torch passes/floor | engine µs/(N+1) "
            "| max abs ΔW (float64) |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['d']} | {r['N']} | {r['K']} | {r['batch']} | {r['engine'] * 1e6:.1f} "
            f"| {r['torch'] * 1e6:.1f} | {r['baseline'] * 1e6:.1f} | {r['floor'] * 1e6:.1f} "
            f"| {r['torch floor'] * 1e6:.1f} | {r['engine'] / r['baseline']:.3f} | {r['engine'] / r['floor']:.2f} "
            f"| {r['engine'] / r['torch floor']:.2f} | {r['torch'] / r['floor']:.2f} "
            f"| {r['engine'] * 1e6 / (r['N'] + 1):.2f} | {r['check']:.1e} |"
        )
    lines += [
        "",
        "Where the engine's time goes (µs per step; the parts timed one at a time in the same repetitions):",
        "",
        "| config | draws (floor) | per-block preparation | SGD step | rest (loop, saving W) |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        us = {k: r[k] * 1e6 for k in ("engine", "floor", "prepare", "update")}
        lines.append(
            f"| {r['config']} | {us['floor']:.1f} | {us['prepare'] - us['floor']:.1f} | {us['update']:.1f} "
            f"| {us['engine'] - us['prepare'] - us['update']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"], help="training precision")
    parser.add_argument("--clock", default="cpu", choices=["cpu", "wall"], help="CPU time of the process, or wall")
    parser.add_argument("--steps", type=int, default=1024, help="engine and floor steps per repetition")
    parser.add_argument("--baseline-steps", type=int, default=64, help="baseline steps per repetition")
    parser.add_argument("--reps", type=int, default=7, help="interleaved repetitions (the median is reported)")
    parser.add_argument("--check-steps", type=int, default=100, help="steps of the float64 equality check")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--output", default="benchmarks/engine.md", help="where the table is written")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    base = TrainSettings(device=args.device, dtype=args.dtype)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = []
    for name in args.configs:
        if CONFIGS[name] is None and args.device != "cpu":
            print(f"{name}: the binary experiment trains on the CPU only; skipped on {args.device}")
            continue
        if CONFIGS[name] is None:
            b = BinarySettings(dtype=args.dtype)
            check = max_binary_weight_difference(replace(b, dtype="float64"), args.check_steps)
            timed = time_binary(
                b, steps=args.steps, baseline_steps=args.baseline_steps, reps=args.reps, clock_name=args.clock
            )
            rows.append({"config": name, "d": b.d, "N": b.N, "K": 1, "batch": b.batch, "check": check, **timed})
            continue
        s = replace(base, **CONFIGS[name])
        check = max_weight_difference(replace(s, dtype="float64"), args.check_steps)
        timed = time_config(
            s, steps=args.steps, baseline_steps=args.baseline_steps, reps=args.reps, clock_name=args.clock
        )
        rows.append({"config": name, "d": s.d, "N": s.N, "K": s.K, "batch": s.batch, "check": check, **timed})
    clock_name = "wall time" if args.device == "cuda" or args.clock == "wall" else "CPU time of the process"
    header = [
        "# Training engine benchmark (`python -m tools.bench`)",
        "",
        (
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {machine()}; device {args.device}, {args.dtype}, "
            f"1 thread; {clock_name}, median of {args.reps} interleaved repetitions of {args.steps} engine and "
            f"floor steps and {args.baseline_steps} baseline steps; load average {load:.2f} at the start."
        ),
        (
            "Times are per seed-step. engine: with its compiled CPU kernels; torch passes: the same engine with "
            "torch operations alone. floor: drawing the step's random numbers alone from the run's stream, as the "
            "engine does; torch floor: torch's normal_ and random_ drawing as many (the draws before the stream). "
            f"max abs ΔW: engine against the autograd baseline over {args.check_steps} float64 steps. binary: "
            "the binary experiment (K: the label width 1); baseline: the reference loop over onenn.maths.model and "
            "onenn.maths.gradient; floor: the fixed set's source alone (permuting, gathering the minibatches); "
            "max abs ΔW: engine against the reference loop on a set of 1 000 prompts."
        ),
    ]
    text = table(rows, header)
    print(text, end="")
    write_with(args.output, lambda tmp: tmp.write_text(text))
    print(f"written to {args.output}")
    return text


if __name__ == "__main__":
    main()
