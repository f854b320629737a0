"""The GPU check of the GPU engine: ``bash tests/gpu/check.sh`` (``python -m tests.gpu.check``;
``--help`` for the options, ``--dry-run`` for the plan without a GPU).

On one machine with a CUDA GPU, in one run that fits in 10 minutes, it prints one table (and writes it to
``--output``), a row for each engine of each check:

1. **equality**: whole runs from the same seed, the GPU engine against the CPU engine (both draw the minibatches of the stream of docs/method.md §4.4), for every loss, float64 and
   float32: the largest difference of the saved weights, against float32 round-off
   (``onenn.training.train.tolerance``); and the result of the check every CUDA training job runs first
   (``onenn.training.train``);
2. **speed**: µs a step of the CPU engine (1 thread) and of the GPU engine, timed in interleaved repetitions;
3. **tests**: ``tests/unit/test_gpu.py`` with the kernel compiled, on CUDA (the slow ones too: the default ``pytest``
   runs the others in the interpreter on a machine without a GPU);
4. **learning**: the quick preset's training runs, trained on both engines from the same seeds: the final separated accuracy and (ξ1, ξ2), which must be equal to
   round-off (``ROUND_OFF``): the two engines train the same runs;
5. **experiments**: the wall time of the paper's experiments 1–6 at the paper's scale with every training job
   on the GPU (Snakemake in a scratch copy of the workflow, ``--gpu-slots`` training jobs sharing the GPU),
   stopped when the time budget runs out.

Without a GPU it stops at once with an error that says so (``--dry-run`` prints the plan anyway).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import yaml

from onenn.analysis.evaluate import evaluate_run
from onenn.base import paths
from onenn.base.io import write_with
from onenn.maths.init import initial_weights
from onenn.maths.losses import LOSSES, Loss
from onenn.maths.prompts import make_test_set
from onenn.maths.stream import stream_key
from onenn.plan import experiments as ex
from onenn.training import cpu_stream
from onenn.training import train as engine_check
from onenn.training.train import TrainSettings, make_engine, train

if TYPE_CHECKING:  # triton is imported only where the GPU engine runs
    from onenn.training.gpu import GpuEngine

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("equality", "speed", "tests", "learning", "experiments")
QUICK = ("config.yaml", "workflow/presets/quick.yaml")
#: equality: the paper's shapes, a few hundred steps (the largest |ΔW| allowed: onenn.training.train.tolerance)
EQUALITY = TrainSettings(steps=300, n_eval=6, seed=0)
#: other shapes, with the square loss: padded classes, a partial chunk, noise in every block of W0
EQUALITY_SHAPES = {"N=64, K=10, batch=100": {"N": 64, "K": 10, "batch": 100, "epsilon": 0.3}}
#: speed: some of the benchmark's configurations (tools.bench engine)
SPEED_CONFIGS = {"defaults": {}, "N=64": {"N": 64}, "K=10": {"K": 10}}
#: the GPU engine with other numbers of warps a program (default 8), at the first configuration
OTHER_WARPS = (4, 16)
HEADER = ["check", "engine", "device", "config", "result", "verdict"]


def require_gpu() -> torch.device:
    """The CUDA device, or a clear error."""
    if not torch.cuda.is_available():
        why = "sees no GPU" if torch.version.cuda else "is a CPU-only build"
        raise SystemExit(
            f"gpu_check: no CUDA GPU (torch {torch.__version__} {why}). Run it on a machine with an NVIDIA GPU "
            "and torch's CUDA build (docs/install.md); --dry-run prints the plan without one."
        )
    return torch.device("cuda")


def row(check: str, engine: str, device: str, config: str, result: str, verdict: str = "") -> dict[str, str]:
    return dict(zip(HEADER, (check, engine, device, config, result, verdict)))


def table(rows: list[dict[str, str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r[h] for h in HEADER) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def gpu_with(s: TrainSettings, device: torch.device, **options) -> GpuEngine:
    """The GPU engine of a run with other speed knobs (``num_warps``, ``chunk``, ``block``) or pre-drawn
    ``minibatches``."""
    from onenn.training.gpu import GpuEngine

    W = torch.from_numpy(initial_weights(s.d, s.K, s.sigma, s.epsilon, s.noise_blocks, s.seed, dtype=s.dtype))
    key, loss = stream_key(s.seed, "minibatches"), Loss(s.loss, s.c)
    return GpuEngine(W.to(device), d=s.d, N=s.N, K=s.K, batch=s.batch, lr=s.lr, loss=loss, key=key, **options)


# --- 1. equality: whole runs from the same seed ----------------------------------------------------------------


def predrawn(s: TrainSettings, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The minibatches of steps ``0 .. steps − 1`` of a run as the CPU engine draws them: Gaussians (steps, d, N+1, B)
    float32, classes (steps, N, B) int64."""
    Z, C = np.empty((steps, s.d, s.N + 1, s.batch), np.float32), np.empty((steps, s.N, s.batch), np.int64)
    cpu_stream.draw_block(Z, C, stream_key(s.seed, "minibatches"), 0, steps, s.K, s.d)
    return torch.from_numpy(Z), torch.from_numpy(C)


def weight_difference(s: TrainSettings, device: torch.device) -> tuple[float, int, float]:
    """A whole run of ``s`` from its seed, the CPU engine against the GPU engine on ``device`` (each drawing its own
    minibatches): max |ΔW| over the saved steps, the step where it is largest, and the tolerance of float32
    round-off (``onenn.training.train.tolerance``)."""
    saved = [0, 1, s.steps // 3, s.steps]
    W_cpu, _ = make_engine(replace(s, device="cpu"), "cpu").run(s.steps, saved)
    W_gpu, _ = make_engine(replace(s, device=device.type), "gpu").run(s.steps, saved)
    difference = np.abs(W_gpu.cpu().numpy() - W_cpu).max(axis=(1, 2))
    worst = int(difference.argmax())
    return float(difference[worst]), saved[worst], engine_check.tolerance(s.steps, float(np.abs(W_cpu).max()))


def equality_rows(
    device: torch.device,
    base: TrainSettings = EQUALITY,
    shapes: dict[str, dict] = EQUALITY_SHAPES,
    *,
    dtypes: tuple[str, ...] = ("float64", "float32"),
    losses: tuple[str, ...] = LOSSES,
) -> list[dict[str, str]]:
    """Every loss at ``base`` (the paper's defaults), and other shapes with the square loss, in both precisions;
    then the GPU check at ``base``."""
    cases = [("defaults", {"loss": loss, "c": 0.5 if loss == "mixture" else 0.0}) for loss in losses]
    cases += list(shapes.items())
    check = "equality: max abs ΔW against the CPU engine, whole runs from the same seed"
    rows = []
    for dtype in dtypes:
        for name, changes in cases:
            s = replace(base, dtype=dtype, **changes)
            difference, step, tolerance = weight_difference(s, device)
            config = f"{name}, {s.loss}, {dtype}, {s.steps} steps"
            verdict = "ok" if difference <= tolerance else f"FAIL (> {tolerance:.1e}, float32 round-off)"
            rows.append(row(check, "gpu", str(device), config, f"{difference:.1e} at step {step}", verdict))
    record = engine_check.run_check(base, device)
    found = "; ".join(f"seed {t['seed']}: {t['max_abs_dW']:.1e} at step {t['at_step']}" for t in record["tries"])
    tolerance = record["tries"][-1]["tolerance"]
    config = f"{record['settings']}, {record['steps']} steps"
    verdict = f"{'passed' if record['passed'] else 'FAILED'} (tolerance {tolerance:.1e})"
    rows.append(row("equality: the GPU check (onenn.training.train)", "gpu", str(device), config, found, verdict))
    return rows


# --- 2. speed -------------------------------------------------------------------------------------------------


def speed_rows(
    device: torch.device, *, steps: int, reps: int, configs: dict[str, dict] = SPEED_CONFIGS
) -> list[dict[str, str]]:
    """µs a step of the CPU engine (1 thread) and of the GPU engine on ``device``."""
    import numba

    numba.set_num_threads(1)
    rows = []
    for name, changes in configs.items():
        s = replace(TrainSettings(), **changes)
        on_device = replace(s, device=device.type)
        engines = {("cpu", "cpu"): make_engine(replace(s, device="cpu"), "cpu")}
        engines["gpu", str(device)] = make_engine(on_device, "gpu")
        if device.type != "cpu" and name == next(iter(configs)):  # other warps a program at the first config
            for warps in OTHER_WARPS:
                engines[f"gpu, {warps} warps", str(device)] = gpu_with(on_device, device, num_warps=warps)
        times: dict[tuple[str, str], list[float]] = {key: [] for key in engines}
        for key, engine in engines.items():
            engine.run(min(steps, 16))  # warm-up: compiles the kernel
        for _ in range(reps):
            for key, engine in engines.items():
                start = time.perf_counter()
                engine.run(steps)
                if key[1] != "cpu":
                    torch.cuda.synchronize(key[1])
                times[key].append((time.perf_counter() - start) / steps)
        cpu = statistics.median(times[("cpu", "cpu")])
        for (engine_name, dev), t in times.items():
            us = statistics.median(t) * 1e6
            config = f"{name} (d={s.d}, N={s.N}, K={s.K}, batch={s.batch}), {s.dtype}"
            rows.append(
                row("speed: µs a step", engine_name, dev, config, f"{us:.1f}", f"{cpu * 1e6 / us:.1f}× the CPU")
            )
    return rows


# --- 3. the kernel's tests, compiled on the GPU -----------------------------------------------------------------


def test_rows(seconds: float) -> list[dict[str, str]]:
    """``tests/unit/test_gpu.py`` with the kernel compiled (``TRITON_INTERPRET=0``): on CUDA, not the interpreter."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "", "tests/unit/test_gpu.py"]
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=seconds, check=False)
        summary = (done.stdout.strip().splitlines() or ["no output"])[-1].strip("= ")
        verdict = "ok" if done.returncode == 0 else f"FAIL (pytest exit {done.returncode})"
    except subprocess.TimeoutExpired:
        summary, verdict = f"not finished in {seconds:.0f} s", "over the budget"
    return [row("tests: tests/unit/test_gpu.py compiled", "gpu", "cuda", "pytest", summary, verdict)]


# --- 4. learning: the quick preset on both engines ------------------------------------------------------------


def load_config(*files: str) -> dict:
    """``--configfile FILES...`` as Snakemake layers them: nested mappings merge, anything else is replaced."""

    def merge(base: dict, update: dict) -> dict:
        out = dict(base)
        for key, value in update.items():
            out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        return out

    config: dict = {}
    for name in files:
        config = merge(config, yaml.safe_load((ROOT / name).read_text()))
    return config


LEARNING_METRICS = ("accuracy", "xi1", "xi2")
#: the largest differences of round-off: one test prompt in 500 in accuracy (a prediction at a near-tie may flip);
#: 1e-4 of ξ (the same runs' W agree far closer: 2.5e-9 of max |W| in Triton's interpreter, onenn.training.train)
ROUND_OFF = {"accuracy": 0.002, "xi1": 1e-4, "xi2": 1e-4}


def final_metrics(s: TrainSettings, engine: str, test: dict) -> np.ndarray:
    """Separated accuracy, ξ1, ξ2 at the last step of a run."""
    r = train(s, engine)
    metrics = evaluate_run(r["saved_steps"][-1:], r["W"][-1:], {"separated": test}, s.K, s.loss, s.c)
    return metrics[list(LEARNING_METRICS)].to_numpy()[0]


def difference(compiled: np.ndarray, fused: np.ndarray) -> float:
    """The largest |difference| of the same runs' final metrics (rows: seeds; columns: accuracy, ξ1, ξ2), in units
    of ``ROUND_OFF`` (absolute for the accuracy, relative to max(1, |ξ|) for ξ). Up to 1: equal to round-off."""
    scale = np.maximum(1.0, np.abs(compiled))
    scale[:, 0] = 1.0
    allowed = np.array([ROUND_OFF[name] for name in LEARNING_METRICS]) * scale
    return float((np.abs(fused - compiled) / allowed).max())


def learning_rows(
    config: dict, device: torch.device, *, seeds: int, max_steps: int | None = None
) -> list[dict[str, str]]:
    """Every training experiment of ``config``, every variant, ``seeds`` seeds on both engines."""
    rows = []
    for experiment in ex.experiment_names(config, kind="train"):
        finals: dict[str, list[np.ndarray]] = {"cpu": [], "gpu": []}
        worst, worst_variant = 0.0, ""
        for variant in ex.variants(config, experiment):
            resolved = ex.settings(config, experiment, variant)
            s = TrainSettings.from_dict({**ex.train_settings(config, experiment, variant, 0), "n_eval": 2})
            s = replace(s, steps=min(s.steps, max_steps or s.steps))
            test = make_test_set(
                "separated", resolved["test_size"], s.d, s.N, s.K, resolved["delta"], config["test_sets"]["seed"]
            )
            per_engine = {
                engine: np.array([final_metrics(replace(s, seed=k, device=dev), engine, test) for k in range(seeds)])
                for engine, dev in (("cpu", "cpu"), ("gpu", device.type))
            }
            for engine, values in per_engine.items():
                finals[engine].append(values)
            ratio = difference(per_engine["cpu"], per_engine["gpu"])
            if ratio >= worst:
                worst, worst_variant = ratio, variant
        n_variants = len(finals["cpu"])
        config_text = f"{experiment}: {n_variants} variants × {seeds} seeds, {s.steps} steps"
        for engine, dev in (("cpu", "cpu"), ("gpu", str(device))):
            means = np.mean([v.mean(0) for v in finals[engine]], axis=0)
            result = f"separated accuracy {means[0]:.3f}, ξ1 {means[1]:.3f}, ξ2 {means[2]:.3f} (mean over variants)"
            verdict = ""
            if engine == "gpu":
                verdict = "equal" if worst <= 1 else "DIFFER"
                verdict += f" (worst |Δ|/round-off {worst:.2f}, {worst_variant})"
            rows.append(
                row("learning: quick preset, final step, same seeds", engine, dev, config_text, result, verdict)
            )
    return rows


# --- 5. experiments 1–6 at the paper's scale on the GPU --------------------------------------------------------


def copy_workflow(dest: Path) -> None:
    """A copy of the workflow in ``dest``, without results, and ``gpu.yaml``: every training job on CUDA."""
    for name in ("Snakefile", "config.yaml"):
        shutil.copy(ROOT / name, dest / name)
    for name in ("workflow", "onenn"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    write_with(dest / "gpu.yaml", lambda tmp: tmp.write_text("defaults:\n  device: cuda\n"))


def experiments_command(gpu_slots: int) -> list[str]:
    """Snakemake, in the copy: the figures of experiments 1–6, ``gpu_slots`` training jobs at once on the GPU."""
    targets = [paths.FIGURE_PNG.format(experiment=name) for name in ex.PAPER_EXPERIMENTS]
    options = ["--cores", "all", "--resources", f"gpu={gpu_slots}", "--keep-going"]
    return [sys.executable, "-m", "snakemake", *targets, *options, "--configfile", "config.yaml", "gpu.yaml"]


def job_seconds(work: Path, rule: str) -> list[float]:
    """The run time of every finished job of ``rule``: the first column of its Snakemake benchmark file."""
    return [float(p.read_text().splitlines()[1].split("\t")[0]) for p in work.glob(f"benchmarks/{rule}/**/*.tsv")]


def run_stopped_after(command: list[str], cwd: Path, seconds: float) -> int | None:
    """Run ``command`` in a process group of its own; after ``seconds``, kill the group (Snakemake and every job
    it started) and return None, else the exit status."""
    with subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    ) as process:
        try:
            return process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return None


def experiment_rows(gpu_slots: int, seconds: float) -> list[dict[str, str]]:
    """Experiments 1–6 at the paper's scale in a scratch copy, stopped after ``seconds``."""
    config = f"experiments 1–6, paper scale, {gpu_slots} training jobs at once on the GPU"
    if seconds < 60:
        return [row("experiments: wall time", "gpu", "cuda", config, "skipped: under 60 s of the budget left")]
    if importlib.util.find_spec("snakemake") is None:
        return [row("experiments: wall time", "gpu", "cuda", config, "skipped: snakemake is not installed")]
    with tempfile.TemporaryDirectory(prefix="onenn-gpu-check-") as tmp:
        work = Path(tmp)
        copy_workflow(work)
        command = experiments_command(gpu_slots)
        started = time.perf_counter()
        rc = run_stopped_after(command, work, seconds)
        wall = time.perf_counter() - started
        trained = job_seconds(work, "train")
    finished = rc is not None
    if not finished:
        result = f"not finished in {wall:.0f} s: {len(trained)} training jobs done"
        return [row("experiments: wall time", "gpu", "cuda", config, result, "over the budget")]
    result = f"{wall / 60:.1f} min wall; {len(trained)} training jobs, {sum(trained):.0f} s of training job time in all"
    verdict = "ok" if rc == 0 else f"FAIL (snakemake exit {rc})"
    return [row("experiments: wall time", "gpu", "cuda", config, result, verdict)]


# --- the check -----------------------------------------------------------------------------------------------


def plan(args: argparse.Namespace) -> str:
    head = f"gpu_check plan (budget {args.budget:.0f} s):\n"
    what = {
        "equality": f"{len(LOSSES) + len(EQUALITY_SHAPES)} cases in float64 and float32, whole runs of "
        f"{EQUALITY.steps} steps from the same seed; the GPU check",
        "speed": f"{', '.join(SPEED_CONFIGS)}: the cpu engine, the gpu engine on cuda; {args.reps} × {args.steps} steps",
        "tests": "python -m pytest tests/unit/test_gpu.py with the kernel compiled, on CUDA",
        "learning": f"the quick preset's training runs, {args.seeds} seeds a variant: cpu and gpu engines, equal",
        "experiments": "in a scratch copy: " + " ".join(experiments_command(args.gpu_slots)),
    }
    return head + "".join(f"  {stage}: {what[stage]}\n" for stage in args.stages)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.gpu.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stages", nargs="+", default=list(STAGES), choices=STAGES)
    parser.add_argument("--budget", type=float, default=540, help="seconds for the whole check (default 540)")
    parser.add_argument("--steps", type=int, default=2048, help="speed: steps a repetition")
    parser.add_argument("--reps", type=int, default=5, help="speed: interleaved repetitions (median)")
    parser.add_argument("--seeds", type=int, default=4, help="learning: seeds a variant and engine")
    parser.add_argument("--gpu-slots", type=int, default=4, help="experiments: training jobs sharing the GPU")
    parser.add_argument("--output", default="benchmarks/gpu.md", help="where the table is written")
    parser.add_argument("--dry-run", action="store_true", help="print the plan; needs no GPU")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> str:
    args = parse(argv)
    if args.dry_run:
        text = plan(args)
        print(text, end="")
        return text
    started = time.perf_counter()
    device = require_gpu()
    import platform

    import triton

    from onenn.base.provenance import processors

    stages: dict[str, Callable[[], list[dict[str, str]]]] = {
        "equality": lambda: equality_rows(device),
        "speed": lambda: speed_rows(device, steps=args.steps, reps=args.reps),
        "tests": lambda: test_rows(max(60.0, args.budget - (time.perf_counter() - started) - 300)),
        "learning": lambda: learning_rows(load_config(*QUICK), device, seeds=args.seeds),
        "experiments": lambda: experiment_rows(args.gpu_slots, args.budget - (time.perf_counter() - started) - 15),
    }
    rows = []
    for name in args.stages:
        stage_start = time.perf_counter()
        rows += stages[name]()
        print(f"gpu_check: {name} done in {time.perf_counter() - stage_start:.0f} s", file=sys.stderr, flush=True)
    header = (
        f"# GPU check (`bash tests/gpu/check.sh`)\n\n{torch.cuda.get_device_name(device)}; CUDA {torch.version.cuda}; "
        f"triton {triton.__version__}; torch {torch.__version__}; {processors()}; Python {platform.python_version()}; {time.perf_counter() - started:.0f} s in all.\n\n"
    )
    text = header + table(rows)
    print(text, end="")
    write_with(args.output, lambda tmp: tmp.write_text(text))
    return text


if __name__ == "__main__":
    main()
