"""The GPU check (docs/performance.md#gpu): before the GPU engine's first run on a device, a few hundred steps of it
and of the CPU engine from one seed, compared to float32 round-off (then from the next seed: a 1-NN near-tie)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from onenn.training.run_setup import make_engine

if TYPE_CHECKING:
    import torch

    from onenn.training.run_setup import TrainSettings

#: the check's steps, and the steps at which the weights are compared
STEPS = 256
SAVED = (1, 16, 64, 128, 256)
#: float32's machine epsilon
EPS32 = 2.0**-23
#: the device types on which a GPU run is checked first (the interpreter's CPU runs in the tests alone)
CHECKED = ("cuda",)
#: the result of each device's check in this process (``str(device)``)
RESULTS: dict[str, dict] = {}


class FusedKernelMismatch(RuntimeError):
    """The GPU engine and the CPU engine, from the same seed, differ beyond float32 round-off."""


def tolerance(steps: int, W_max: float) -> float:
    """The largest max |ΔW| of two float32 runs that make the same updates: one rounding of each weight a step."""
    return steps * EPS32 * max(1.0, W_max)


def compare(settings: TrainSettings, device: torch.device, steps: int) -> dict:
    """The largest |ΔW| of ``steps`` steps of the GPU engine and of the CPU engine, its step, and the tolerance."""
    s = replace(settings, device="cpu")
    cpu = make_engine(s, "cpu")
    kernel = make_engine(replace(s, device=device.type), "gpu")
    saved = [t for t in SAVED if t < steps] + [steps]
    W_kernel = kernel.run(steps, saved)[0].double().cpu().numpy()
    W_cpu = cpu.run(steps, saved)[0].astype(np.float64)
    difference = differences(W_kernel, W_cpu)
    worst = int(np.argmax(difference))
    finite = W_cpu[np.isfinite(W_cpu)]
    return {
        "seed": s.seed,
        "max_abs_dW": float(difference[worst]),
        "at_step": saved[worst],
        "tolerance": tolerance(steps, float(np.abs(finite).max(initial=0.0))),
    }


def differences(W_kernel: np.ndarray, W_cpu: np.ndarray) -> np.ndarray:
    """max |ΔW| at each saved step: infinite where only one run's weights are finite, 0 where neither's are."""
    finite_kernel, finite_cpu = (np.isfinite(W).all(axis=(1, 2)) for W in (W_kernel, W_cpu))
    with np.errstate(invalid="ignore"):
        difference = np.abs(W_kernel - W_cpu).max(axis=(1, 2))
    both = finite_kernel & finite_cpu
    return np.where(both, difference, np.where(finite_kernel == finite_cpu, 0.0, np.inf))


def run_check(settings: TrainSettings, device: torch.device, steps: int | None = None) -> dict:
    """The check's record (``steps``: ``STEPS``), from the run's seed and, if that fails, from the next seed."""
    steps = STEPS if steps is None else steps
    tries = []
    for seed in (settings.seed, (settings.seed + 1) % 2**32):
        tries.append(compare(replace(settings, seed=seed), device, steps))
        if tries[-1]["max_abs_dW"] <= tries[-1]["tolerance"]:
            break
    last, s = tries[-1], settings
    return {
        "passed": last["max_abs_dW"] <= last["tolerance"],
        "device": str(device),
        "steps": steps,
        "settings": f"d={s.d}, N={s.N}, K={s.K}, batch={s.batch}, lr={s.lr}, loss {s.loss} (c={s.c}), {s.dtype}",
        "tries": tries,
    }


def failure(record: dict) -> str:
    """The error of a failed check: the difference, where, the tolerance and the fallback."""
    found = "; ".join(
        f"seed {t['seed']}: max |ΔW| = {t['max_abs_dW']:.3g} at step {t['at_step']} (tolerance {t['tolerance']:.3g})"
        for t in record["tries"]
    )
    return (
        f"the GPU engine does not reproduce the CPU engine on {record['device']}: {record['steps']} steps "
        f"({record['settings']}) from the same seed give weights that differ from the CPU engine's beyond "
        f"float32 round-off ({found}). The Triton kernel is wrong on this GPU or with this Triton; train on the CPU "
        "(device: cpu in the config), and report the GPU, CUDA and Triton versions"
    )


def check_once(settings: TrainSettings, device: torch.device, steps: int | None = None) -> dict:
    """The check's record for ``device``, made once in this process; raises ``FusedKernelMismatch`` if it failed."""
    key = str(device)
    if key not in RESULTS:
        RESULTS[key] = run_check(settings, device, steps)
    record = RESULTS[key]
    if not record["passed"]:
        raise FusedKernelMismatch(failure(record))
    return record
