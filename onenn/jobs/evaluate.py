"""The evaluation jobs (numpy, no torch): a run's metrics at every saved step on its test sets."""

from __future__ import annotations

import logging
from typing import Any

from onenn.base.io import save_table
from onenn.jobs.columns import descriptions
from onenn.jobs.inputs import load_prompt_set, load_run_record, load_weights
from onenn.plan.kinds import EVAL_KEYS

#: run-record entries that are no column of the tables: the fused check (a nested record, in the records of CUDA
#: runs alone; onenn.training.gpu_check)
RECORD_ONLY = ("fused_check",)


def load_run(
    weights_path: str,
    run_path: str,
    identity: dict,
    settings: dict,
    label_width: int | None,
    needed: tuple[str, ...] = (),
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run's checked record (of ``identity``, trained with ``settings`` but ``EVAL_KEYS``, with the keys ``needed``)
    and weights: ``W`` (S, D, D), ``D = d + m + 1``, ``m = label_width`` (None: K)."""
    trained_with = {k: v for k, v in settings.items() if k not in EVAL_KEYS}
    needed = ("d", "N", "steps", *(("K",) if label_width is None else ()), *needed)
    run = load_run_record(run_path, identity, trained_with, needed=needed)
    weights = load_weights(weights_path, run, D=run["d"] + (label_width or run["K"]) + 1)
    return run, weights


def save_metrics(kind: str, metrics, run: dict, settings: dict, weights: dict, output: str) -> None:
    """The run's metrics as its table (``onenn.analysis.tables.run_table``), with its record and test sets' settings."""
    from onenn.analysis.tables import run_table

    columns = {k: v for k, v in run.items() if k not in RECORD_ONLY}
    info = {**columns, "delta": float(settings["delta"]), "test_size": int(settings["test_size"])}
    table = run_table(metrics, info, weights["minibatch_loss"], weights["saved_steps"])
    save_table(output, table, descriptions(kind))


def evaluate_job(
    settings: dict,
    *,
    identity: dict,
    weights_path: str,
    run_path: str,
    test_set_paths: dict[str, str],
    output: str,
    log: logging.Logger,
) -> None:
    """Metrics of every saved ``W`` on every test set, with the run's identity and settings, as one table (no torch)."""
    from onenn.maths.prompts import SET_ARRAYS

    run, weights = load_run(weights_path, run_path, identity, settings, None)
    test_sets = {
        name: load_prompt_set(path, SET_ARRAYS, n=settings["test_size"], N=run["N"], d=run["d"], K=run["K"])
        for name, path in test_set_paths.items()
    }

    from onenn.analysis.evaluate import evaluate_run  # pandas: after the inputs are checked

    metrics = evaluate_run(
        weights["saved_steps"], weights["W"], test_sets, settings["K"], settings["loss"], settings["c"]
    )
    save_metrics("train", metrics, run, settings, weights, output)
    log.info("evaluated %d saved steps on %s", len(weights["saved_steps"]), ", ".join(test_sets))


def binary_evaluate_job(
    settings: dict,
    *,
    identity: dict,
    weights_path: str,
    run_path: str,
    set_paths: dict[str, str],
    output: str,
    log: logging.Logger,
) -> None:
    """Metrics of every saved ``W`` on the training set and the test sets, as one table (no torch)."""
    from onenn.maths.prompts import BINARY_SET_ARRAYS

    run, weights = load_run(weights_path, run_path, identity, settings, 1, needed=("train_size",))
    sizes = {name: run["train_size"] if name == "train" else settings["test_size"] for name in set_paths}
    sets = {
        name: load_prompt_set(path, BINARY_SET_ARRAYS, n=sizes[name], N=run["N"], d=run["d"], K=None)
        for name, path in set_paths.items()
    }

    from onenn.analysis.evaluate import evaluate_binary  # pandas: after the inputs are checked

    metrics = evaluate_binary(weights["saved_steps"], weights["W"], sets, run["d"])
    save_metrics("binary", metrics, run, settings, weights, output)
    log.info("evaluated %d saved steps on %s", len(weights["saved_steps"]), ", ".join(sets))
