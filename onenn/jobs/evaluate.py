"""The evaluation job (numpy, no torch): a run's metrics at every saved step on its test sets."""

from logging import Logger

from onenn.base.io import save_table
from onenn.jobs.columns import descriptions
from onenn.jobs.inputs import load_prompt_set, load_run_record, load_weights
from onenn.plan.kinds import EVAL_KEYS


def evaluate_job(
    settings: dict,
    *,
    identity: dict,
    weights_path: str,
    run_path: str,
    test_set_paths: dict[str, str],
    output: str,
    log: Logger,
    kind: str = "train",
) -> None:
    """Metrics of every saved ``W`` on every test set (and a ``binary`` run's training set ``train``), with the run's
    record (of ``identity``, trained with ``settings`` but ``EVAL_KEYS``) and test sets' settings, as one table."""
    from onenn.maths.prompts import BINARY_SET_ARRAYS, SET_ARRAYS

    binary = kind == "binary"
    trained_with = {k: v for k, v in settings.items() if k not in EVAL_KEYS}
    run = load_run_record(run_path, identity, trained_with, needed=("d", "N", "steps", "train_size" if binary else "K"))
    weights = load_weights(weights_path, run, D=run["d"] + (1 if binary else run["K"]) + 1)  # D = d + m + 1
    arrays, K = (BINARY_SET_ARRAYS, None) if binary else (SET_ARRAYS, run["K"])
    sets = {}
    for name, path in test_set_paths.items():
        n = run["train_size"] if name == "train" else settings["test_size"]
        delta = settings["delta"] if name == "separated" else None
        named = {"test_set": name, "delta": delta, "labels": run.get("labels")}
        sets[name] = load_prompt_set(path, arrays, n=n, N=run["N"], d=run["d"], K=K, named=named)

    from onenn.analysis.evaluate import evaluate_binary, evaluate_run  # pandas: after the inputs are checked
    from onenn.analysis.tables import run_table

    steps, W = weights["saved_steps"], weights["W"]
    if binary:
        metrics = evaluate_binary(steps, W, sets, run["d"])
    else:
        metrics = evaluate_run(steps, W, sets, settings["K"], settings["loss"], settings["c"])
    columns = {k: v for k, v in run.items() if k != "fused_check"}  # no column: CUDA runs' nested gpu_check record
    info = {**columns, "delta": float(settings["delta"]), "test_size": int(settings["test_size"])}
    save_table(output, run_table(metrics, info, weights["minibatch_loss"], steps), descriptions(kind))
    log.info("evaluated %d saved steps on %s", len(steps), ", ".join(sets))
