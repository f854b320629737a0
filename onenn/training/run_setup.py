"""A training run's setup, up to its first step: its settings (``TrainSettings``), the device it runs on
(``device_type``, ``resolve_device``), the engines (``ENGINES``) and the factory that builds a run's engine at its
start, with its minibatch source (``make_engine``). ``onenn.training.train`` runs the engine; the fused kernel's
check (``onenn.training.fused_check``) and the autograd baseline build theirs from here too.

A run on the CPU imports no torch here: torch is imported where a torch tensor is made, and ``device: auto`` is
resolved without it where no GPU driver is present (``device_type``)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onenn.base.settings import DEVICES, Settings
from onenn.maths.init import PRECISIONS, initial_array, initial_weights
from onenn.maths.losses import Loss
from onenn.maths.stream import stream_key
from onenn.training.engine import Engine
from onenn.training.sources import FreshDraws, draw_step

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
    """The torch dtype of a precision of ``onenn.maths.init.PRECISIONS`` (``float32``, ``float64``)."""
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
    (``onenn.training.sources.draw_step``)."""
    import torch

    z = torch.empty(d, N + 1, batch, dtype=torch.float32, device=device)
    classes = torch.empty(N, batch, dtype=torch.long, device=device)
    draw_step(z, classes, K, key, step)
    z = z.to(dtype)
    x = z * torch.rsqrt((z * z).sum(0, keepdim=True))
    return x.permute(2, 1, 0).contiguous(), classes.T.contiguous()


def make_engine(settings: TrainSettings, engine: str = "auto", *, numpy: bool = False) -> Engine | FusedEngine:
    """The engine of a run, at its start: ``W0`` drawn on the CPU from the seed (the same start on every
    device); the minibatches from the random stream of docs/method.md §4.4 under the run's minibatch key
    ``stream_key(seed, "minibatches")``, the same numbers on every engine and device (``Engine`` takes them from a
    ``FreshDraws`` source, the fused kernel draws them itself). ``engine``, one of ``ENGINES``:
    ``compiled``, ``Engine`` with its compiled kernels (``onenn.training.kernels``, CPU only); ``torch``, ``Engine``
    with its torch operations alone; ``fused``, the fused kernel (on a CPU tensor only under Triton's interpreter,
    as in the tests); ``auto``, fused on CUDA and compiled on the CPU. ``numpy``: where the engine is the compiled
    one on the CPU, it holds numpy arrays instead of torch tensors (the same numbers) and torch is not imported,
    as ``onenn.training.train.train`` does; the other engines hold torch tensors whatever it says."""
    s = settings
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    key = stream_key(s.seed, "minibatches")
    loss = Loss(s.loss, s.c)
    start = (s.d, s.K, s.sigma, s.epsilon, s.noise_blocks, s.seed)
    if numpy and engine in ("auto", "compiled") and device_type(s.device) == "cpu":
        W = initial_array(*start, dtype=s.dtype)
        source = FreshDraws(key)
        return Engine(W, d=s.d, N=s.N, m=s.K, batch=s.batch, lr=s.lr, loss=loss, source=source, compiled=True)
    device = resolve_device(s.device)
    W = initial_weights(*start, dtype=torch_dtype(s.dtype)).to(device)
    if engine == "fused" or (engine == "auto" and device.type == "cuda"):
        fused_engine = import_fused_engine()
        return fused_engine(W, d=s.d, N=s.N, K=s.K, batch=s.batch, lr=s.lr, loss=loss, key=key)
    compiled = {"compiled": True, "torch": False, "auto": None}[engine]
    source = FreshDraws(key)
    return Engine(W, d=s.d, N=s.N, m=s.K, batch=s.batch, lr=s.lr, loss=loss, source=source, compiled=compiled)


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
