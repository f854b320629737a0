"""Training runs: settings, the minibatch stream, and SGD with the analytic gradient (docs/method.md §4) through
``onenn.training.engine`` on the CPU, or the fused Triton kernel of ``onenn.training.fused`` on a CUDA device.

A run on the CPU trains on the engine's compiled kernels with numpy arrays, and imports no torch: neither here
(torch is imported where a torch tensor is made) nor to resolve ``device: auto`` where no GPU driver is present
(``device_type``)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from onenn.base.settings import DEVICES, Settings
from onenn.init import PRECISIONS, initial_array, initial_weights
from onenn.losses import Loss
from onenn.steps import log_spaced_steps
from onenn.stream import stream_key
from onenn.training.engine import Engine, device_name, draw_step, float64_array

if TYPE_CHECKING:  # triton is imported only where the fused kernel runs; torch where a tensor is made
    import torch

    from onenn.training.fused import FusedEngine

#: files of which one is present wherever a GPU driver that torch can use is (Linux): NVIDIA's (also in
#: containers), ROCm's, WSL's; where none is, torch sees no GPU, and ``device: auto`` is the CPU without asking it
GPU_DRIVER_FILES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")
#: how a run's steps are computed: ``compiled``, ``Engine`` through its compiled kernels (numba, CPU only);
#: ``torch``, ``Engine`` through torch operations alone (any device); ``fused``, ``FusedEngine``'s Triton kernel (CUDA);
#: ``auto``, fused on CUDA and compiled on the CPU (the workflow's choice; the benchmarks and the tests choose one)
ENGINES = ("auto", "compiled", "torch", "fused")
ON_DIVERGENCE = ("error", "record")


@dataclass(frozen=True)
class TrainSettings(Settings):
    """Everything one training run depends on. Names follow docs/method.md."""

    WHAT = "training settings"

    d: int = 8
    N: int = 16
    K: int = 3
    sigma: float = 3.0
    lr: float = 0.05
    batch: int = 128
    loss: str = "square"
    c: float = 0.0
    epsilon: float = 0.0
    noise_blocks: str = "all"
    steps: int = 100_000
    n_eval: int = 48
    seed: int = 0
    device: str = "auto"
    dtype: str = "float32"
    on_divergence: str = "error"  # error: raise Diverged | record: keep the steps before the divergence


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a precision of ``onenn.init.PRECISIONS`` (``float32``, ``float64``)."""
    import torch

    if name not in PRECISIONS:
        raise ValueError(f"dtype must be one of {', '.join(PRECISIONS)}; got {name!r}")
    return getattr(torch, name)


def gpu_driver_present() -> bool:
    """Whether torch may see a GPU here: on Linux, one of ``GPU_DRIVER_FILES`` exists; elsewhere, assumed."""
    return not sys.platform.startswith("linux") or any(os.path.exists(path) for path in GPU_DRIVER_FILES)


def device_type(device: str) -> str:
    """``cpu`` or ``cuda``, as ``resolve_device`` resolves ``device``, without importing torch for ``cpu``, nor for
    ``auto`` where no GPU driver is present (``gpu_driver_present``)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    if device == "cpu" or (device == "auto" and not gpu_driver_present()):
        return "cpu"
    return resolve_device(device).type


def resolve_device(device: str) -> torch.device:
    """``auto`` is CUDA when available, else the CPU; ``cuda`` without CUDA is an error."""
    import torch

    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        why = f"torch {torch.__version__} " + ("sees no GPU" if torch.version.cuda else "is a CPU-only build")
        raise RuntimeError(
            f"device: cuda was requested but CUDA is not available on this machine ({why}); "
            "use device: auto (CUDA when available, else the CPU) or device: cpu"
        )
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def sample_batch(
    batch: int, N: int, d: int, K: int, key: int, step: int, *, dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """A fresh minibatch from Assumption 1: ``x`` (B, N+1, d) on the sphere, classes ``classes`` (B, N). The same
    numbers as step ``step`` of the engine of the run with the minibatch key ``key``
    (``onenn.training.engine.draw_step``)."""
    import torch

    z = torch.empty(d, N + 1, batch, dtype=torch.float32, device=device)
    classes = torch.empty(N, batch, dtype=torch.long, device=device)
    draw_step(z, classes, K, key, step)
    z = z.to(dtype)
    x = z * torch.rsqrt((z * z).sum(0, keepdim=True))
    return x.permute(2, 1, 0).contiguous(), classes.T.contiguous()


def make_engine(settings: TrainSettings, engine: str = "auto", *, numpy: bool = False) -> Engine | FusedEngine:
    """The engine of a run, at its start: ``W0`` drawn on the CPU from the seed (the same start on every
    device); the minibatches from the random stream of docs/method.md §4.4 under the run's
    ``(seed, "minibatches")`` key, the same numbers on every engine and device. ``engine``, one of ``ENGINES``:
    ``compiled``, ``Engine`` with its compiled kernels (``onenn.training.kernels``, CPU only); ``torch``, ``Engine``
    with its torch operations alone; ``fused``, the fused kernel (on a CPU tensor only under Triton's interpreter,
    as in the tests); ``auto``, fused on CUDA and compiled on the CPU. ``numpy``: where the engine is the compiled
    one on the CPU, it holds numpy arrays instead of torch tensors (the same numbers) and torch is not imported,
    as ``train`` does; the other engines hold torch tensors whatever it says."""
    s = settings
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    key = stream_key(s.seed, "minibatches")
    loss = Loss(s.loss, s.c)
    start = (s.d, s.K, s.sigma, s.epsilon, s.noise_blocks, s.seed)
    if numpy and engine in ("auto", "compiled") and device_type(s.device) == "cpu":
        W = initial_array(*start, dtype=s.dtype)
        return Engine(W, d=s.d, N=s.N, m=s.K, batch=s.batch, lr=s.lr, loss=loss, key=key, compiled=True)
    device = resolve_device(s.device)
    W = initial_weights(*start, dtype=torch_dtype(s.dtype)).to(device)
    if engine == "fused" or (engine == "auto" and device.type == "cuda"):
        fused_engine = import_fused_engine()
        return fused_engine(W, d=s.d, N=s.N, K=s.K, batch=s.batch, lr=s.lr, loss=loss, seed=key)
    compiled = {"compiled": True, "torch": False, "auto": None}[engine]
    return Engine(W, d=s.d, N=s.N, m=s.K, batch=s.batch, lr=s.lr, loss=loss, key=key, compiled=compiled)


def import_fused_engine() -> type[FusedEngine]:
    """``onenn.training.fused.FusedEngine``, imported only where it runs: triton comes with torch's CUDA build."""
    try:
        from onenn.training.fused import FusedEngine
    except ImportError as error:
        raise RuntimeError(
            f"training on CUDA uses the fused Triton kernel, but triton cannot be imported ({error}); install "
            "it with `pip install -r workflow/envs/triton.txt` (or train with device: cpu)"
        ) from error
    return FusedEngine


def train(settings: TrainSettings, engine: str = "auto") -> dict[str, np.ndarray | str]:
    """Run SGD; return the saved weights ``W`` (S, D, D) at ``saved_steps`` (S,), the minibatch loss of every step
    (``steps``,) and the device used. A CPU run is deterministic for its seed. ``engine``: ``make_engine``. A run of
    the fused kernel on CUDA is preceded, the first time in a process, by the kernel's check against the CPU engine
    (``onenn.training.selfcheck``; it raises if they differ), whose record is returned as ``fused_check``."""
    sgd = make_engine(settings, engine, numpy=True)
    check = first_use_check(settings, sgd)
    saved_steps = log_spaced_steps(settings.steps, settings.n_eval, refine=True)
    saved, minibatch_loss = sgd.run(settings.steps, saved_steps.tolist())
    W_saved, losses = float64_array(saved), float64_array(minibatch_loss)
    result = {"saved_steps": saved_steps, "W": W_saved, "minibatch_loss": losses, "device": device_name(sgd.W)}
    if check is not None:
        result["fused_check"] = check
    return apply_divergence_policy(result, settings.on_divergence)


def first_use_check(settings: TrainSettings, sgd: Engine | FusedEngine) -> dict | None:
    """The fused kernel's first-use check (``onenn.training.selfcheck``) where ``sgd`` is the fused engine on a
    checked device (CUDA), else None."""
    if isinstance(sgd, Engine):
        return None
    from onenn.training import selfcheck

    if sgd.W.device.type not in selfcheck.CHECKED:
        return None
    return selfcheck.check_first_use(settings, sgd.W.device)


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
        saved = (
            "none"
            if self.last_saved_step is None
            else f"step {self.last_saved_step} (max |W_ij| = {self.last_saved_max:.6g})"
        )
        return (
            f"non-finite minibatch loss or weights at step {self.step}; last finite minibatch loss {loss}; "
            f"last finite saved W at {saved}"
        )


def find_divergence(W: np.ndarray, losses: np.ndarray, saved_steps: np.ndarray) -> Divergence | None:
    """The first non-finite minibatch loss (``losses[t]`` is the loss of ``W_t``) or saved weight, if any."""
    bad_loss = np.flatnonzero(~np.isfinite(losses))
    bad_W = np.flatnonzero(~np.isfinite(W).all(axis=(1, 2)))
    candidates = [int(bad_loss[0])] if len(bad_loss) else []
    candidates += [int(saved_steps[bad_W[0]])] if len(bad_W) else []
    if not candidates:
        return None
    first = min(candidates)
    finite = np.flatnonzero(np.isfinite(losses[:first]))
    before = np.flatnonzero(saved_steps < first)
    return Divergence(
        step=first,
        last_loss_step=int(finite[-1]) if len(finite) else None,
        last_loss=float(losses[finite[-1]]) if len(finite) else None,
        last_saved_step=int(saved_steps[before[-1]]) if len(before) else None,
        last_saved_max=float(np.abs(W[before[-1]]).max()) if len(before) else None,
    )


def check_finite(W: np.ndarray, losses: np.ndarray, saved_steps: np.ndarray) -> None:
    """Raise ``Diverged`` at the first non-finite minibatch loss or saved weight, naming the step and the
    last finite values."""
    divergence = find_divergence(W, losses, saved_steps)
    if divergence is not None:
        raise Diverged(f"training diverged: {divergence}")


def apply_divergence_policy(result: dict, on_divergence: str) -> dict:
    """``error``: raise ``Diverged`` if the run diverged. ``record``: keep the saved steps before the divergence
    (at least step 0) and the minibatch losses before it, and add ``diverged_step`` (-1: it did not diverge)."""
    if on_divergence not in ON_DIVERGENCE:
        raise ValueError(f"on_divergence must be one of {', '.join(ON_DIVERGENCE)}; got {on_divergence!r}")
    saved_steps, W, losses = result["saved_steps"], result["W"], result["minibatch_loss"]
    if on_divergence == "error":
        check_finite(W, losses, saved_steps)
        return {**result, "diverged_step": -1}
    divergence = find_divergence(W, losses, saved_steps)
    if divergence is None:
        return {**result, "diverged_step": -1}
    keep = max(1, int((saved_steps < divergence.step).sum()))
    return {
        **result,
        "saved_steps": saved_steps[:keep],
        "W": W[:keep],
        "minibatch_loss": losses[: divergence.step],
        "diverged_step": divergence.step,
        "divergence": str(divergence),
    }
