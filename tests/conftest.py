import os

import numpy as np
import pytest
import torch

from onenn.losses import LOSSES

# The fused CUDA kernel's tests (tests/test_fused.py) run it, on a machine without a GPU, on CPU tensors in Triton's
# interpreter, which has to be switched on before triton is first imported (nothing else in the tests imports
# triton). With a GPU they run it compiled, on CUDA (the GPU check, tests/gpu/check.sh, runs them there too).
os.environ.setdefault("TRITON_INTERPRET", "0" if torch.cuda.is_available() else "1")


#: one case per loss of the registry (``onenn.losses.LOSSES``), as settings: the mixture at an interior weight, where
#: both of its terms count (the other losses ignore ``c``). The equivalence tests run over these, so a loss added to
#: the registry is covered, and fails them until every implementation has it (docs/extending.md).
LOSS_CASES = [{"loss": name, "c": 0.3 if name == "mixture" else 0.0} for name in LOSSES]


def loss_id(case: dict) -> str:
    """A test id for a dictionary of settings changes: its values, or ``default``."""
    return "-".join(f"{key}={value}" for key, value in case.items()) or "default"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


def random_prompts(rng: np.random.Generator, B: int, N: int, d: int, K: int):
    """Prompts as float64 torch tensors: x on the sphere (B, N+1, d) and classes (B, N)."""
    x = rng.standard_normal((B, N + 1, d))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    classes = rng.integers(0, K, size=(B, N))
    return torch.from_numpy(x), torch.from_numpy(classes)
