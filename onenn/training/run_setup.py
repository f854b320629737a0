"""A training run's setup (docs/method.md §4.2): its settings, its device and its engine, the CPU engine (numba) or
the GPU engine (Triton, CUDA). A CPU run imports no torch; ``device: auto`` needs none where no GPU driver is."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onenn.base.settings import DEVICES, Settings
from onenn.maths.init import initial_weights
from onenn.maths.losses import Loss
from onenn.maths.stream import stream_key
from onenn.training.cpu import Engine, FreshDraws

if TYPE_CHECKING:  # torch and triton are imported only where the GPU engine runs
    import torch

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


def make_engine(settings: TrainSettings, engine: str = "auto") -> Engine | GpuEngine:
    """A run's engine (``ENGINES``) at its start: ``W0`` and the minibatches' stream the same on every engine."""
    s = settings
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
