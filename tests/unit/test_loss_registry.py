"""The loss checklist (docs/extending.md): a loss registered in ``onenn.maths.losses`` alone, with its torch definition,
trains with the torch engine and is refused by every other implementation, each naming what to add; the compiled
kernels refuse an unknown code themselves; every implementation holds the registry's losses, no more, no fewer."""

import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch
import yaml

from onenn.maths import losses, model_numpy
from onenn.analysis import evaluate as E
from onenn.maths.losses import LOSSES, Loss, LossNotImplemented, loss_code
from onenn.training import kernels
from onenn.training.run_setup import TrainSettings, make_engine
from tests.configs import ROOT

NEW = "quartic"
SMALL = TrainSettings(d=4, N=6, K=3, batch=8, lr=0.5, steps=5, n_eval=2, seed=1, device="cpu", dtype="float64")


def quartic(ell: torch.Tensor, target_class, y_target: torch.Tensor, c: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``¼ Σ_k (ℓ_k − y*_k)⁴`` and its gradient ``(ℓ − y*)³``: a loss no implementation but torch's knows."""
    residual = ell - y_target
    return 0.25 * (residual**4).sum(-1), residual**3


@pytest.fixture
def new_loss(monkeypatch: pytest.MonkeyPatch) -> str:
    """A loss added to the registry, and to nothing else: its torch definition only."""
    monkeypatch.setitem(losses.DEFINITIONS, NEW, quartic)
    monkeypatch.setattr(losses, "LOSSES", (*losses.LOSSES, NEW))
    return NEW


def refused(implementation: str, where: str) -> str:
    """The refusal's message: the loss, the implementation that lacks it, and where to add it (file and function)."""
    return (
        rf"loss '{NEW}' is registered in onenn/maths/losses.py but has no implementation in {re.escape(implementation)}.*; "
        rf"add .*{re.escape(where)}"
    )


def test_the_torch_definition_is_the_registry_and_the_torch_engine_trains_with_it(new_loss):
    assert Loss(new_loss).name == NEW and loss_code(new_loss) == len(LOSSES)
    s = replace(SMALL, loss=new_loss)
    W, losses_new = make_engine(s, "torch").run(s.steps, [s.steps])
    W_square, losses_square = make_engine(SMALL, "torch").run(s.steps, [s.steps])
    assert not torch.equal(W, W_square)  # trained with the new loss, not the square loss
    # the first step's minibatch loss is the new loss at the common start W0, on the same minibatch
    assert losses_new[0] != losses_square[0] and torch.isfinite(losses_new).all()


def test_the_compiled_cpu_kernels_refuse_it(new_loss):
    with pytest.raises(
        LossNotImplemented,
        match=refused("the compiled CPU kernels (numba", "_loss_gradient in onenn/training/kernels.py"),
    ):
        make_engine(replace(SMALL, loss=new_loss), "compiled")
    with pytest.raises(LossNotImplemented, match="_loss_gradient"):
        kernels.loss_branch(new_loss)


def test_the_fused_kernel_refuses_it(new_loss):
    pytest.importorskip("triton")
    from onenn.training import fused

    with pytest.raises(
        LossNotImplemented,
        match=refused("the fused CUDA kernel (Triton", "sgd_block_kernel in onenn/training/fused.py"),
    ):
        fused.FusedEngine(
            torch.zeros(8, 8, dtype=torch.float64), d=4, N=6, K=3, batch=8, lr=0.5, loss=Loss(new_loss), key=0
        )
    with pytest.raises(LossNotImplemented, match="sgd_block_kernel"):
        fused.loss_branch(new_loss)


def test_the_numpy_model_and_the_evaluation_refuse_it(new_loss):
    ell, target_class, y_target = np.zeros((2, 3)), np.zeros(2, int), np.zeros((2, 3))
    with pytest.raises(
        LossNotImplemented,
        match=refused("the numpy model", "onenn/maths/model_numpy.py and its entry to LOSS_VALUES"),
    ):
        model_numpy.loss_values(new_loss, 0.0, ell, target_class, y_target)
    with pytest.raises(LossNotImplemented, match="LOSS_VALUES"):  # before any metric is computed
        E.evaluate_run(np.array([0]), np.zeros((1, 8, 8)), {"uniform": {}}, 3, new_loss)


def test_an_unregistered_loss_is_refused_with_the_registered_ones():
    for check in (Loss, kernels.loss_branch, model_numpy.check_loss):
        with pytest.raises(ValueError, match=f"loss must be one of {', '.join(LOSSES)}; got 'hinge'"):
            check("hinge")


def test_the_numba_kernel_has_no_default_branch():
    """An unknown code, should one pass the Python side, stops the kernel instead of computing another loss. (Through
    the engine: ``_loss_gradient`` compiled on its own, outside ``sgd_steps``, would be cached on its own, and
    ``sgd_steps`` compiled later would call that copy instead of inlining it: float64 results an ulp apart.)"""
    engine = make_engine(SMALL, "compiled")
    engine.run(1)  # a known code runs
    engine.loss_code = (len(LOSSES), 0.0)
    with pytest.raises(ValueError, match="a loss code without a branch"):
        engine.run(1)


def test_the_triton_kernel_has_no_default_branch():
    """The same in the Triton kernel: a compile-time assertion on its code (compiled, or in the interpreter)."""
    pytest.importorskip("triton")
    from onenn.training import fused

    device = "cpu" if fused.interpreting() else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("TRITON_INTERPRET is off and there is no GPU")
    W = torch.zeros(8, 8, dtype=torch.float64, device=device)
    engine = fused.FusedEngine(W, d=4, N=6, K=3, batch=8, lr=0.5, loss=Loss(), key=0)
    engine.run(1)  # a known code runs
    engine.loss_code = len(LOSSES)
    with pytest.raises(Exception, match="a loss code without a branch"):
        engine.run(1)


def test_numbas_cache_with_codes_of_an_older_registry_is_refused(monkeypatch):
    """The kernels take the registry's codes as compiled constants, which numba's disk cache keeps; a registry whose
    codes moved since (here: the mixture's) is caught before a kernel runs."""
    kernels.loss_branch("mixture")  # the codes compiled (or loaded from the cache) as they are now
    moved = tuple(len(LOSSES) if name == "mixture" else code for name, code in zip(kernels.IMPLEMENTED, kernels.CODES))
    monkeypatch.setattr(kernels, "CODES", moved)
    with pytest.raises(RuntimeError, match="numba's cache of onenn/training/kernels.py holds loss codes"):
        kernels.loss_branch("square")


def test_every_implementation_has_the_registrys_losses():
    """What a new loss must be added to; the equivalence tests then hold each one to the torch definition."""
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    assert tuple(schema["$defs"]["settings"]["properties"]["loss"]["enum"]) == LOSSES  # the configuration's choices
    assert tuple(kernels.IMPLEMENTED) == LOSSES
    assert tuple(model_numpy.LOSS_VALUES) == LOSSES


def test_the_fused_kernel_has_the_registrys_losses():
    pytest.importorskip("triton")
    from onenn.training import fused

    assert tuple(fused.IMPLEMENTED) == LOSSES


def test_the_registry_imports_no_torch():
    """The numpy model reads it, and an evaluation job must not import torch."""
    code = "import sys, onenn.maths.losses, onenn.maths.model_numpy, onenn.analysis.evaluate; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
