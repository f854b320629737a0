"""Fixtures shared by the tests. Plain helpers shared by test modules are in tests/helpers.py (and the bad
configurations in tests/bad_configs.py): a test module imports no other test module, nor a conftest."""

import os
from pathlib import Path

import numpy as np
import pytest
import torch

# The fused CUDA kernel's tests (tests/unit/test_gpu.py) run it, on a machine without a GPU, on CPU tensors in Triton's
# interpreter, which has to be switched on before triton is first imported (nothing else in the tests imports
# triton). With a GPU they run it compiled, on CUDA (the GPU check, tests/gpu/check.sh, runs them there too).
os.environ.setdefault("TRITON_INTERPRET", "0" if torch.cuda.is_available() else "1")
# The tests draw into files, as the figure jobs do (the library leaves the backend to its user): Agg, not a window
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


WORKFLOW_TESTS = Path(__file__).parent / "workflow"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/workflow/ (they run Snakemake) is marked ``workflow``, so that
    ``python -m pytest -m "not workflow and not slow"`` is the quick loop."""
    for item in items:
        if WORKFLOW_TESTS in item.path.parents:
            item.add_marker(pytest.mark.workflow)
