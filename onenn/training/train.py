"""A training run, from its settings to its saved weights: SGD with the analytic gradient (docs/method.md §4) on the
engine that ``onenn.training.run_setup.make_engine`` builds, ``onenn.training.engine``'s on the CPU or the fused Triton
kernel of ``onenn.training.fused`` on a CUDA device, and the divergence policy (``on_divergence``).

A run on the CPU trains on the engine's compiled kernels with numpy arrays, and imports no torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from onenn.maths.steps import log_spaced_steps
from onenn.training.engine import Engine, device_name, float64_array
from onenn.training.run_setup import TrainSettings, make_engine

if TYPE_CHECKING:  # triton is imported only where the fused kernel runs
    from onenn.base.progress import Progress
    from onenn.training.fused import FusedEngine

ON_DIVERGENCE = ("error", "record")


def train(
    settings: TrainSettings, engine: str = "auto", progress: Progress | None = None
) -> dict[str, np.ndarray | str]:
    """Run SGD; return the saved weights ``W`` (S, D, D) at ``saved_steps`` (S,), the minibatch loss of every step
    (``steps``,) and the device used. A CPU run is deterministic for its seed. ``engine``: ``make_engine``. A run of
    the fused kernel on CUDA is preceded, the first time in a process, by the kernel's check against the CPU engine
    (the fused check, ``onenn.training.fused_check``; it raises if they differ), whose record is returned as
    ``fused_check``. ``progress`` (``onenn.base.progress.Progress``): called after every block of steps with the
    steps done, ``settings.steps`` and the last minibatch loss (the jobs pass ``StepProgress``, which logs a line
    every few seconds); by default the run is silent. It changes no number."""
    sgd = make_engine(settings, engine, numpy=True)
    check = run_fused_check(settings, sgd)
    saved_steps = log_spaced_steps(settings.steps, settings.n_eval, refine=True)
    saved, minibatch_loss = sgd.run(settings.steps, saved_steps.tolist(), progress)
    W_saved, losses = float64_array(saved), float64_array(minibatch_loss)
    result = {"saved_steps": saved_steps, "W": W_saved, "minibatch_loss": losses, "device": device_name(sgd.W)}
    if check is not None:
        result["fused_check"] = check
    return apply_divergence_policy(result, settings.on_divergence)


def run_fused_check(settings: TrainSettings, sgd: Engine | FusedEngine) -> dict | None:
    """The fused check (``onenn.training.fused_check``) where ``sgd`` is the fused engine on a
    checked device (CUDA), else None."""
    if isinstance(sgd, Engine):
        return None
    from onenn.training import fused_check

    if sgd.W.device.type not in fused_check.CHECKED:
        return None
    return fused_check.check_once(settings, sgd.W.device)


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
