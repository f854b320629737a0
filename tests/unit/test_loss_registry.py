"""The loss checklist (docs/guide.md#a-loss): a loss defined in the reference (onenn.maths.losses) alone is evaluated
there and refused by every port, each naming what to add; the compiled loops refuse an unknown code themselves; every
port holds the registry's losses, no more, no fewer."""

import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch
import yaml

from onenn.maths import losses
from onenn.maths.losses import LOSSES, Loss, LossNotImplemented, loss_code
from onenn.training import cpu_steps
from onenn.training.train import TrainSettings, make_engine
from tests.configs import ROOT

NEW = "quartic"
SMALL = TrainSettings(d=4, N=6, K=3, batch=8, lr=0.5, steps=5, n_eval=2, seed=1, device="cpu", dtype="float64")


def quartic(ell: np.ndarray, target_class, y_target: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """``¼ Σ_k (ℓ_k − y*_k)⁴`` and its gradient ``(ℓ − y*)³``: a loss no port knows."""
    residual = ell - y_target
    return 0.25 * (residual**4).sum(-1), residual**3


@pytest.fixture
def new_loss(monkeypatch: pytest.MonkeyPatch) -> str:
    """A loss added to the reference, and to nothing else."""
    monkeypatch.setitem(losses.DEFINITIONS, NEW, quartic)
    monkeypatch.setattr(losses, "LOSSES", (*losses.LOSSES, NEW))
    return NEW


def refused(implementation: str, where: str) -> str:
    """The refusal's message: the loss, the implementation that lacks it, and where to add it (file and function)."""
    return (
        rf"loss '{NEW}' is registered in onenn/maths/losses.py but has no implementation in {re.escape(implementation)}.*; "
        rf"add .*{re.escape(where)}"
    )


def test_the_reference_is_the_registry_and_evaluates_it(new_loss):
    assert Loss(new_loss).name == NEW and loss_code(new_loss) == len(LOSSES)
    ell, y = np.array([[1.0, 0.0], [0.5, 0.5]]), np.zeros((2, 2))
    np.testing.assert_array_equal(Loss(new_loss, 0.0)(ell, np.zeros(2, int), y)[0], [0.25, 0.03125])


def test_the_compiled_cpu_kernels_refuse_it(new_loss):
    with pytest.raises(
        LossNotImplemented,
        match=refused("the CPU engine's compiled loops (numba", "_loss_gradient in onenn/training/cpu_steps.py"),
    ):
        make_engine(replace(SMALL, loss=new_loss), "cpu")
    with pytest.raises(LossNotImplemented, match="_loss_gradient"):
        cpu_steps.loss_branch(new_loss)


def test_the_fused_kernel_refuses_it(new_loss):
    pytest.importorskip("triton")
    from onenn.training import gpu

    with pytest.raises(
        LossNotImplemented,
        match=refused("the GPU engine's kernel (Triton", "sgd_block_kernel in onenn/training/gpu.py"),
    ):
        gpu.GpuEngine(
            torch.zeros(8, 8, dtype=torch.float64), d=4, N=6, K=3, batch=8, lr=0.5, loss=Loss(new_loss), key=0
        )
    with pytest.raises(LossNotImplemented, match="sgd_block_kernel"):
        gpu.loss_branch(new_loss)


def test_an_unregistered_loss_is_refused_with_the_registered_ones():
    for check in (Loss, cpu_steps.loss_branch, losses.check_registered):
        with pytest.raises(ValueError, match=f"loss must be one of {', '.join(LOSSES)}; got 'hinge'"):
            check("hinge")


def test_the_numba_kernel_has_no_default_branch():
    """An unknown code, should one pass the Python side, stops the kernel instead of computing another loss. (Through
    the engine: ``_loss_gradient`` compiled on its own, outside ``sgd_steps``, would be cached on its own, and
    ``sgd_steps`` compiled later would call that copy instead of inlining it: float64 results an ulp apart.)"""
    engine = make_engine(SMALL, "cpu")
    engine.run(1)  # a known code runs
    engine.loss_code = (len(LOSSES), 0.0)
    with pytest.raises(ValueError, match="a loss code without a branch"):
        engine.run(1)


def test_the_triton_kernel_has_no_default_branch():
    """The same in the Triton kernel: a compile-time assertion on its code (compiled, or in the interpreter)."""
    pytest.importorskip("triton")
    from onenn.training import gpu

    device = "cpu" if gpu.interpreting() else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("TRITON_INTERPRET is off and there is no GPU")
    W = torch.zeros(8, 8, dtype=torch.float64, device=device)
    engine = gpu.GpuEngine(W, d=4, N=6, K=3, batch=8, lr=0.5, loss=Loss(), key=0)
    engine.run(1)  # a known code runs
    engine.loss_code = len(LOSSES)
    with pytest.raises(Exception, match="a loss code without a branch"):
        engine.run(1)


def test_numbas_cache_with_codes_of_an_older_registry_is_refused(monkeypatch):
    """The kernels take the registry's codes as compiled constants, which numba's disk cache keeps; a registry whose
    codes moved since (here: the mixture's) is caught before a kernel runs."""
    cpu_steps.loss_branch("mixture")  # the codes compiled (or loaded from the cache) as they are now
    moved = tuple(
        len(LOSSES) if name == "mixture" else code for name, code in zip(cpu_steps.IMPLEMENTED, cpu_steps.CODES)
    )
    monkeypatch.setattr(cpu_steps, "CODES", moved)
    with pytest.raises(RuntimeError, match="numba's cache of onenn/training/cpu_steps.py holds loss codes"):
        cpu_steps.loss_branch("square")


def test_every_implementation_has_the_registrys_losses():
    """What a new loss must be added to; the port tests then hold each one to the reference."""
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    assert tuple(schema["$defs"]["train"]["properties"]["loss"]["enum"]) == LOSSES  # the configuration's choices
    assert tuple(cpu_steps.IMPLEMENTED) == LOSSES


def test_the_fused_kernel_has_the_registrys_losses():
    pytest.importorskip("triton")
    from onenn.training import gpu

    assert tuple(gpu.IMPLEMENTED) == LOSSES


def test_the_registry_imports_no_torch():
    """The reference reads it, and an evaluation job must not import torch."""
    code = "import sys, onenn.maths.losses, onenn.maths.model, onenn.analysis.evaluate; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
