"""The training jobs: a multiclass run and a binary run, each written as its weights and its run record."""

import time
from logging import Logger

from onenn.base.io import save_arrays, save_json
from onenn.base.progress import EVERY, Progress, StepProgress, both
from onenn.base.provenance import accelerator, code_provenance, versions
from onenn.jobs.inputs import WEIGHTS_ARRAYS, load_prompt_set

#: what the entries of a multiclass run's record that are no setting mean (columns of its table)
RECORD_DESCRIPTIONS = {
    "device_used": "the device the run trained on (`cpu`, `cuda:0`); `device` is the one asked for",
    "diverged": "whether the run diverged (kept with `on_divergence: record`)",
    "diverged_step": "the step it diverged at, −1 if it did not",
}
#: the same of a binary run's record
BINARY_RECORD_DESCRIPTIONS = {
    "steps": "the run's SGD steps: `epochs` passes over the `train_size` prompts in minibatches of `batch`"
}


def train_job(
    settings: dict,
    *,
    identity: dict,
    weights_path: str,
    run_path: str,
    threads: int,
    log: Logger,
    progress_every: float = EVERY,
    progress: Progress | None = None,
) -> None:
    """Train, then write the weights (npz) and the resolved run record (json); ``identity`` names the run.
    Progress lines (at most every ``progress_every`` s) and ``progress`` calls never go into the outputs."""
    from onenn.training.train import Diverged, TrainSettings, device_type, train

    s = TrainSettings.from_dict(settings)
    if device_type(s.device) != "cpu":  # the run trains in torch: give it the job's threads (at least one)
        import torch

        torch.set_num_threads(max(1, int(threads)))
    log.info("training %s with %s", identity, s.to_dict())
    run = ", ".join(f"{k} {v}" for k, v in identity.items()) or "training run"  # experiment e, variant v, seed 0
    started = time.perf_counter()
    try:
        result = train(s, progress=both(StepProgress(log.info, every=progress_every), progress))
    except Diverged as err:
        advice = "Lower lr, or set on_divergence: record to keep the steps before the divergence"
        raise Diverged(f"{run}: {err}. {advice}") from err
    seconds = time.perf_counter() - started
    diverged = result["diverged_step"]
    if diverged >= 0:
        log.warning("%s diverged (kept, on_divergence: record): %s", run, result["divergence"])
    record = {**identity, **s.to_dict(), **versions(), **accelerator(), **code_provenance("onenn.jobs.train:train_job")}
    record |= {"device_used": result["device"], "diverged": diverged >= 0, "diverged_step": diverged, "seed": s.seed}
    if "fused_check" in result:  # the fused check, on CUDA alone (onenn.training.train.check_once)
        record["fused_check"] = result["fused_check"]
    named = {k: record[k] for k in (*identity, *s.to_dict())}  # the weights say which run they are
    save_arrays(weights_path, named, **{name: result[name] for name in WEIGHTS_ARRAYS})
    save_json(run_path, record)
    log.info("done: %d steps in %.1f s on %s", s.steps, seconds, result["device"])


def binary_train_job(
    settings: dict,
    *,
    identity: dict,
    train_path: str,
    weights_path: str,
    run_path: str,
    threads: int,
    log: Logger,
    progress_every: float = EVERY,
) -> None:
    """Binary SGD on the fixed training set on the compiled CPU kernels, one thread; write weights and run record."""
    from onenn.maths.prompts import BINARY_SET_ARRAYS

    n, named = settings["train_size"], {"test_set": "train", "labels": settings["labels"]}
    train_set = load_prompt_set(
        train_path, BINARY_SET_ARRAYS, n=n, N=settings["N"], d=settings["d"], K=None, named=named
    )

    from onenn.training.binary import BinarySettings, train_binary  # numba: after the input is checked

    s = BinarySettings.from_dict(settings)
    log.info("binary training %s with %s (%d steps)", identity, s.to_dict(), s.steps)
    started = time.perf_counter()
    try:
        result = train_binary(s, train_set, progress=StepProgress(log.info, every=progress_every))
    except FloatingPointError as err:
        raise FloatingPointError(f"{identity}: {err}") from err
    seconds = time.perf_counter() - started
    named = {**identity, **s.to_dict(), "steps": s.steps}
    save_arrays(weights_path, named, **{name: result[name] for name in WEIGHTS_ARRAYS})
    # the wall time goes to the job's log (and its benchmark file), not into the record: the record, and the tables
    # made from it, are the same bytes for the same settings, wherever and whenever they ran
    save_json(run_path, {**named, **versions(), **code_provenance("onenn.jobs.train:binary_train_job")})
    log.info("done: %d steps in %.1f s (%.3f ms/step)", s.steps, seconds, 1e3 * seconds / s.steps)
