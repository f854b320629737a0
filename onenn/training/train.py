"""A training run (docs/method.md §4.2): its device, its engine (CPU: numba; CUDA: Triton, after the GPU check of
docs/performance.md#gpu) and the divergence policy. No torch on the CPU, nor for ``device: auto`` without a driver."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from onenn.base.settings import DEVICES, Settings
from onenn.maths.init import initial_weights
from onenn.maths.losses import Loss
from onenn.maths.steps import log_spaced_steps
from onenn.maths.stream import stream_key
from onenn.training.cpu import Engine, FreshDraws

if TYPE_CHECKING:  # torch and triton are imported only where the GPU engine runs
    import torch

    from onenn.base.progress import Progress
    from onenn.training.gpu import GpuEngine

#: files of which one is present wherever a GPU driver that torch can use is (Linux): NVIDIA's, ROCm's, WSL's
GPU_DRIVER_FILES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")
#: a run's engines: ``cpu`` (numba), ``gpu`` (Triton; CPU tensors only under its interpreter), ``auto`` (the device's)
ENGINES = ("auto", "cpu", "gpu")


@dataclass(frozen=True)
class TrainSettings(Settings, schema="train"):
    """Everything one training run depends on. Names follow docs/method.md."""

    WHAT = "training settings"

    d: int
    N: int
    K: int
    sigma: float
    lr: float
    batch: int
    loss: str
    c: float
    epsilon: float
    noise_blocks: str
    steps: int
    n_eval: int
    seed: int = 0
    device: str
    dtype: str
    on_divergence: str  # error: raise Diverged | record: keep the steps before the divergence


def gpu_driver_present() -> bool:
    """Whether torch may see a GPU here: on Linux, one of ``GPU_DRIVER_FILES`` exists; elsewhere, assumed."""
    return not sys.platform.startswith("linux") or any(os.path.exists(path) for path in GPU_DRIVER_FILES)


def device_type(device: str) -> str:
    """``cpu`` or ``cuda``, as ``resolve_device`` resolves ``device``, importing torch only where it may see a GPU."""
    if device == "cpu" or (device == "auto" and not gpu_driver_present()):
        return "cpu"
    return resolve_device(device).type


def resolve_device(device: str) -> torch.device:
    """``auto`` is CUDA when available, else the CPU; ``cuda`` without CUDA is an error."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        why = f"torch {torch.__version__} " + ("sees no GPU" if torch.version.cuda else "is a CPU-only build")
        raise RuntimeError(
            f"device: cuda was requested but CUDA is not available on this machine ({why}); "
            "use device: auto (CUDA when available, else the CPU) or device: cpu"
        )
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def make_engine(s: TrainSettings, engine: str = "auto") -> Engine | GpuEngine:
    """A run's engine (``ENGINES``) at its start: ``W0`` and the minibatches' stream the same on every engine."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    if engine == "auto":
        engine = "gpu" if device_type(s.device) == "cuda" else "cpu"
    key, loss = stream_key(s.seed, "minibatches"), Loss(s.loss, s.c)
    W = initial_weights(s.d, s.K, s.sigma, s.epsilon, s.noise_blocks, s.seed, dtype=s.dtype)
    if engine == "cpu":
        if s.device == "cuda":
            raise ValueError("the engine 'cpu' trains on the CPU; the settings ask for device: cuda")
        return Engine(W, d=s.d, N=s.N, m=s.K, batch=s.batch, lr=s.lr, loss=loss, source=FreshDraws(key))
    import torch

    try:  # triton comes with torch's CUDA build
        from onenn.training.gpu import GpuEngine
    except ImportError as error:
        raise RuntimeError(
            f"training on CUDA uses the GPU engine's Triton kernel, but triton cannot be imported ({error}); install "
            "it with `pip install -r workflow/envs/triton.txt` (or train with device: cpu)"
        ) from error
    W = torch.from_numpy(W).to(resolve_device(s.device))
    return GpuEngine(W, d=s.d, N=s.N, K=s.K, batch=s.batch, lr=s.lr, loss=loss, key=key)


#: the check's steps, and the steps at which the weights are compared
STEPS = 256
SAVED = (1, 16, 64, 128, 256)
#: the device types on which a GPU run is checked first (the interpreter's CPU runs in the tests alone)
CHECKED = ("cuda",)
#: the result of each device's check in this process (``str(device)``)
RESULTS: dict[str, dict] = {}


class FusedKernelMismatch(RuntimeError):
    """The GPU engine and the CPU engine, from the same seed, differ beyond float32 round-off."""


def tolerance(steps: int, W_max: float) -> float:
    """The largest max |ΔW| of two float32 runs that make the same updates: one rounding of each weight a step."""
    return steps * 2.0**-23 * max(1.0, W_max)  # 2^-23: float32's machine epsilon


def differences(W_kernel: np.ndarray, W_cpu: np.ndarray) -> np.ndarray:
    """max |ΔW| at each saved step: infinite where only one run's weights are finite, 0 where neither's are."""
    finite_kernel, finite_cpu = (np.isfinite(W).all(axis=(1, 2)) for W in (W_kernel, W_cpu))
    with np.errstate(invalid="ignore"):
        difference = np.abs(W_kernel - W_cpu).max(axis=(1, 2))
    return np.where(finite_kernel & finite_cpu, difference, np.where(finite_kernel == finite_cpu, 0.0, np.inf))


def run_check(settings: TrainSettings, device: torch.device, steps: int | None = None) -> dict:
    """The check's record (``steps``: ``STEPS``): the largest |ΔW| of the GPU and the CPU engine's runs, its step and
    the tolerance, from the run's seed and, if that fails, from the next seed."""
    steps = STEPS if steps is None else steps
    saved, tries = [t for t in SAVED if t < steps] + [steps], []
    for seed in (settings.seed, (settings.seed + 1) % 2**32):
        s = replace(settings, seed=seed, device="cpu")
        W_kernel = make_engine(replace(s, device=device.type), "gpu").run(steps, saved)[0].double().cpu().numpy()
        W_cpu = make_engine(s, "cpu").run(steps, saved)[0].astype(np.float64)
        difference, W_max = differences(W_kernel, W_cpu), float(np.abs(W_cpu[np.isfinite(W_cpu)]).max(initial=0.0))
        worst = int(np.argmax(difference))
        at, tol = saved[worst], tolerance(steps, W_max)
        tries.append({"seed": seed, "max_abs_dW": float(difference[worst]), "at_step": at, "tolerance": tol})
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


def check_once(settings: TrainSettings, device: torch.device, steps: int | None = None) -> dict:
    """The check's record for ``device``, made once a process; raises ``FusedKernelMismatch`` if it failed."""
    if str(device) not in RESULTS:
        RESULTS[str(device)] = run_check(settings, device, steps)
    record = RESULTS[str(device)]
    if not record["passed"]:
        found = "; ".join(
            f"seed {t['seed']}: max |ΔW| = {t['max_abs_dW']:.3g} at step {t['at_step']} "
            f"(tolerance {t['tolerance']:.3g})"
            for t in record["tries"]
        )
        raise FusedKernelMismatch(
            f"the GPU engine does not reproduce the CPU engine on {record['device']}: {record['steps']} steps "
            f"({record['settings']}) from the same seed give weights that differ from the CPU engine's beyond "
            f"float32 round-off ({found}). The Triton kernel is wrong on this GPU or with this Triton; train on the "
            "CPU (device: cpu in the config), and report the GPU, CUDA and Triton versions"
        )
    return record


ON_DIVERGENCE = ("error", "record")


def train(
    settings: TrainSettings, engine: str = "auto", progress: Progress | None = None
) -> dict[str, np.ndarray | str]:
    """Run SGD: the saved weights ``W`` (S, D, D) at ``saved_steps`` (S,), every step's minibatch loss, the device and,
    on CUDA, the GPU check's record (``fused_check``). ``progress`` is called after every block (no number changes)."""
    sgd = make_engine(settings, engine)
    on_cpu = isinstance(sgd.W, np.ndarray)
    check = None if on_cpu or sgd.W.device.type not in CHECKED else check_once(settings, sgd.W.device)  # may raise
    record = {"device": "cpu" if on_cpu else str(sgd.W.device)} | ({} if check is None else {"fused_check": check})
    return recorded_run(sgd, settings.steps, settings.n_eval, progress, settings.on_divergence, **record)


def recorded_run(sgd, steps: int, n_eval: int, progress, on_divergence: str, **record) -> dict:
    """``sgd.run`` (an engine or ``FixedSetSGD``), ``W`` saved at log-spaced steps, in float64 with ``record`` and
    ``diverged_step`` (-1: none); a divergence raises ``Diverged`` (``error``) or cuts the run (docs/reliability.md)."""
    if on_divergence not in ON_DIVERGENCE:
        raise ValueError(f"on_divergence must be one of {', '.join(ON_DIVERGENCE)}; got {on_divergence!r}")
    saved_steps = log_spaced_steps(steps, n_eval, refine=True)
    arrays = sgd.run(steps, saved_steps.tolist(), progress)
    W, losses = (a.astype(np.float64) if isinstance(a, np.ndarray) else a.double().cpu().numpy() for a in arrays)
    result = {"saved_steps": saved_steps, "W": W, "minibatch_loss": losses, **record}
    divergence = find_divergence(W, losses, saved_steps)
    if divergence is None:
        return {**result, "diverged_step": -1}
    if on_divergence == "error":
        raise Diverged(f"training diverged: {divergence}")
    keep = max(1, int((saved_steps < divergence.step).sum()))
    return {
        **result,
        "saved_steps": saved_steps[:keep],
        "W": W[:keep],
        "minibatch_loss": losses[: divergence.step],
        "diverged_step": divergence.step,
        "divergence": str(divergence),
    }


class Diverged(FloatingPointError):
    """Training produced a non-finite loss or weight."""


@dataclass(frozen=True)
class Divergence:
    """Where a run diverged and the last finite values before it."""

    step: int  # the first step whose minibatch loss, or saved W, is not finite
    last_loss_step: int | None  # the last step with a finite minibatch loss before ``step``
    last_loss: float | None
    last_saved_step: int | None  # the last saved step before ``step`` (its W is finite)
    last_saved_max: float | None  # max |W_ij| there

    def __str__(self) -> str:
        loss = "none" if self.last_loss is None else f"{self.last_loss:.6g} at step {self.last_loss_step}"
        step = self.last_saved_step
        saved = "none" if step is None else f"step {step} (max |W_ij| = {self.last_saved_max:.6g})"
        return (
            f"non-finite minibatch loss or weights at step {self.step}; last finite minibatch loss {loss}; "
            f"last finite saved W at {saved}"
        )


def find_divergence(W: np.ndarray, losses: np.ndarray, saved_steps: np.ndarray) -> Divergence | None:
    """The first non-finite minibatch loss (``losses[t]`` is the loss of ``W_t``) or saved weight, if any."""
    candidates = [*np.flatnonzero(~np.isfinite(losses))[:1], *saved_steps[~np.isfinite(W).all(axis=(1, 2))][:1]]
    if not candidates:
        return None
    first = int(min(candidates))
    finite = np.flatnonzero(np.isfinite(losses[:first]))
    before = np.flatnonzero(saved_steps < first)
    loss = (int(finite[-1]), float(losses[finite[-1]])) if len(finite) else (None, None)
    saved = (int(saved_steps[before[-1]]), float(np.abs(W[before[-1]]).max())) if len(before) else (None, None)
    return Divergence(first, *loss, *saved)
