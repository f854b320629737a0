"""A training run, from its settings to its saved weights (docs/method.md §4.2): the engine (the GPU engine after its
check, ``gpu_check``) and the divergence policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from onenn.maths.steps import log_spaced_steps
from onenn.training import gpu_check
from onenn.training.run_setup import TrainSettings, make_engine

if TYPE_CHECKING:
    from onenn.base.progress import Progress

ON_DIVERGENCE = ("error", "record")


def train(
    settings: TrainSettings, engine: str = "auto", progress: Progress | None = None
) -> dict[str, np.ndarray | str]:
    """Run SGD: the saved weights ``W`` (S, D, D) at ``saved_steps`` (S,), every step's minibatch loss, the device and,
    on CUDA, the GPU check's record (``fused_check``). ``progress`` is called after every block (no number changes)."""
    sgd, check = make_engine(settings, engine), None
    if not isinstance(sgd.W, np.ndarray) and sgd.W.device.type in gpu_check.CHECKED:
        check = gpu_check.check_once(settings, sgd.W.device)  # it raises if the engines differ
    saved_steps = log_spaced_steps(settings.steps, settings.n_eval, refine=True)
    saved, minibatch_loss = sgd.run(settings.steps, saved_steps.tolist(), progress)
    if isinstance(sgd.W, np.ndarray):
        W_saved, losses, device = saved.astype(np.float64), minibatch_loss.astype(np.float64), "cpu"
    else:
        W_saved, losses = saved.double().cpu().numpy(), minibatch_loss.double().cpu().numpy()
        device = str(sgd.W.device)
    result = {"saved_steps": saved_steps, "W": W_saved, "minibatch_loss": losses, "device": device}
    if check is not None:
        result["fused_check"] = check
    return apply_divergence_policy(result, settings.on_divergence)


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
        saved, step = "none", self.last_saved_step
        if step is not None:
            saved = f"step {step} (max |W_ij| = {self.last_saved_max:.6g})"
        return (
            f"non-finite minibatch loss or weights at step {self.step}; last finite minibatch loss {loss}; "
            f"last finite saved W at {saved}"
        )


def find_divergence(W: np.ndarray, losses: np.ndarray, saved_steps: np.ndarray) -> Divergence | None:
    """The first non-finite minibatch loss (``losses[t]`` is the loss of ``W_t``) or saved weight, if any."""
    bad_W = saved_steps[~np.isfinite(W).all(axis=(1, 2))]
    candidates = [*np.flatnonzero(~np.isfinite(losses))[:1], *bad_W[:1]]
    if not candidates:
        return None
    first = int(min(candidates))
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
    """Raise ``Diverged`` at the first non-finite minibatch loss or saved weight, naming the last finite values."""
    divergence = find_divergence(W, losses, saved_steps)
    if divergence is not None:
        raise Diverged(f"training diverged: {divergence}")


def apply_divergence_policy(result: dict, on_divergence: str) -> dict:
    """``error``: raise ``Diverged`` if the run diverged. ``record``: keep the saved steps (at least step 0) and the
    losses before the divergence, and add ``diverged_step`` (-1: none) (docs/reliability.md)."""
    if on_divergence not in ON_DIVERGENCE:
        raise ValueError(f"on_divergence must be one of {', '.join(ON_DIVERGENCE)}; got {on_divergence!r}")
    saved_steps, W, losses = result["saved_steps"], result["W"], result["minibatch_loss"]
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
