"""The workflow's jobs: one function per step of the pipeline, each called by one thin ``workflow/scripts/*.py``.

A job takes plain values (a settings dict from the rule's ``params``, paths, the run's identity, threads and the
job's logger), reads its inputs, calls the layer that does the work, and writes its outputs atomically. The
layers below compute and return values; the jobs are the only code that reads and writes the workflow's files.

Like the rest of ``onenn.pipeline`` this module imports neither torch nor pandas when it is imported
(``tests/test_layers.py``): each job imports the layer it calls when it runs, so a job that draws prompts or
aggregates tables never loads torch.

Every file a job reads goes through a loader of ``onenn.pipeline.inputs`` (or ``onenn.pipeline.io``), which checks
it before anything is computed and raises ``DamagedFile`` naming the file, what is wrong, the rule that makes it
and the command that remakes it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from onenn.pipeline.inputs import (
    ANY,
    NUMBER,
    WEIGHTS_ARRAYS,
    load_checked_table,
    load_prompt_set,
    load_run_record,
    load_weights,
)
from onenn.pipeline.io import load_text, save_arrays, save_json, save_table, write_with
from onenn.pipeline.provenance import versions

# --------------------------------------------------------------------------------------------------------
# Prompt sets
# --------------------------------------------------------------------------------------------------------


def test_set_job(
    test_set: str,
    test_size: int,
    d: int,
    N: int,
    K: int,
    delta: float | None,
    seed: int,
    output: str,
    log: logging.Logger,
) -> None:
    """A multiclass test set (``uniform`` or ``separated``) of ``test_size`` prompts."""
    from onenn.prompts import make_test_set

    save_arrays(output, **make_test_set(test_set, test_size, d, N, K, delta, seed))
    log.info("wrote %s test set: %d prompts", test_set, test_size)


def binary_set_job(
    test_set: str,
    prompts: int,
    d: int,
    N: int,
    labels: str,
    delta: float | None,
    seed: int,
    output: str,
    log: logging.Logger,
) -> None:
    """A binary prompt set of ``prompts`` prompts: the fixed training set (test set ``train``) or a test set."""
    from onenn.prompts import make_binary_set

    save_arrays(output, **make_binary_set(test_set, prompts, d, N, labels, delta, seed))
    log.info("wrote binary %s set: %d prompts, d=%d, N=%d, %s labels", test_set, prompts, d, N, labels)


# --------------------------------------------------------------------------------------------------------
# Training (torch) and evaluation (numpy)
# --------------------------------------------------------------------------------------------------------


def use_threads(threads: int) -> None:
    """Give torch the job's ``threads`` (at least one)."""
    import torch

    torch.set_num_threads(max(1, int(threads)))


def describe_run(identity: dict) -> str:
    """``experiment convergence, variant N=16, seed 0``."""
    return ", ".join(f"{k} {v}" for k, v in identity.items()) or "training run"


def train_job(
    settings: dict, *, identity: dict, weights_path: str, run_path: str, threads: int, log: logging.Logger
) -> None:
    """Train, then write the weights (npz) and the resolved run record (json). ``identity`` (experiment, variant,
    seed) goes into the record and into any divergence error."""
    from onenn.training.train import Diverged, TrainSettings, train

    use_threads(threads)
    s = TrainSettings.from_dict(settings)
    log.info("training %s with %s", identity, s.to_dict())
    started = time.perf_counter()
    try:
        result = train(s)
    except Diverged as err:
        raise Diverged(
            f"{describe_run(identity)}: {err}. Lower lr, or set on_divergence: record to keep "
            "the steps before the divergence"
        ) from err
    seconds = time.perf_counter() - started
    if result["diverged_step"] >= 0:
        log.warning("%s diverged (kept, on_divergence: record): %s", describe_run(identity), result["divergence"])
    save_arrays(weights_path, **{name: result[name] for name in WEIGHTS_ARRAYS})
    record = {
        **identity,
        **s.to_dict(),
        "device_used": result["device"],
        **versions(),
        "diverged": result["diverged_step"] >= 0,
        "diverged_step": result["diverged_step"],
    }
    record["seed"] = s.seed
    save_json(run_path, record)
    log.info("done: %d steps in %.1f s on %s", s.steps, seconds, result["device"])


def load_run(
    weights_path: str,
    run_path: str,
    identity: dict,
    settings: dict,
    label_width: int | None,
    needed: tuple[str, ...] = (),
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run's record and its saved weights, checked (``onenn.pipeline.inputs``): the record belongs to the run
    ``identity`` trained with ``settings`` and has the keys ``needed``, and the weights ``W`` (S, D, D),
    ``D = d + m + 1``, fit it, with ``m = label_width`` (``None``: the run's ``K``, the width of the simplex
    code)."""
    needed = ("d", "N", "steps", *(("K",) if label_width is None else ()), *needed)
    run = load_run_record(run_path, identity, settings, needed=needed)
    weights = load_weights(weights_path, run, D=run["d"] + (label_width or run["K"]) + 1)
    return run, weights


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
    """Metrics of every saved ``W`` on every test set, with the run's identity and settings, as one Parquet
    table. ``identity`` (experiment, variant, seed) and the training ``settings`` must be the run record's.
    numpy only, one thread: the job does not import torch (``onenn.analysis.evaluate``)."""
    from onenn.pipeline.experiments import EVAL_KEYS
    from onenn.prompts import SET_ARRAYS

    trained_with = {k: v for k, v in settings.items() if k not in EVAL_KEYS}
    run, weights = load_run(weights_path, run_path, identity, trained_with, None)
    test_sets = {
        name: load_prompt_set(path, SET_ARRAYS, n=settings["test_size"], N=run["N"], d=run["d"], K=run["K"])
        for name, path in test_set_paths.items()
    }

    from onenn.analysis.evaluate import evaluate_run  # pandas: after the inputs are checked
    from onenn.analysis.tables import run_table

    metrics = evaluate_run(weights["steps"], weights["W"], test_sets, settings["K"], settings["loss"], settings["c"])
    info = {**run, "delta": float(settings["delta"]), "test_size": int(settings["test_size"])}
    save_table(output, run_table(metrics, info, weights["minibatch_loss"], weights["steps"]))
    log.info("evaluated %d saved steps on %s", len(weights["steps"]), ", ".join(test_sets))


def binary_train_job(
    settings: dict,
    *,
    identity: dict,
    train_path: str,
    weights_path: str,
    run_path: str,
    threads: int,
    log: logging.Logger,
) -> None:
    """Binary SGD on the fixed training set; write the weights (npz) and the resolved run record (json)."""
    from onenn.prompts import BINARY_SET_ARRAYS

    train_set = load_prompt_set(
        train_path, BINARY_SET_ARRAYS, n=settings["train_size"], N=settings["N"], d=settings["d"], K=None
    )

    from onenn.training.binary import BinarySettings, train_binary  # torch: after the input is checked

    use_threads(threads)
    s = BinarySettings.from_dict(settings)
    log.info("binary training %s with %s (%d steps)", identity, s.to_dict(), s.steps)
    started = time.perf_counter()
    try:
        result = train_binary(s, train_set)
    except FloatingPointError as err:
        raise FloatingPointError(f"{identity}: {err}") from err
    seconds = time.perf_counter() - started
    save_arrays(weights_path, **{name: result[name] for name in WEIGHTS_ARRAYS})
    record = {
        **identity,
        **s.to_dict(),
        "steps": s.steps,
        "seconds": seconds,
        "ms_per_step": 1e3 * seconds / s.steps,
        **versions(),
    }
    save_json(run_path, record)
    log.info("done: %d steps in %.1f s (%.3f ms/step)", s.steps, seconds, 1e3 * seconds / s.steps)


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
    """Metrics of every saved ``W`` on the training set and the test sets, as one Parquet table. ``identity``
    (experiment, variant, seed) must be the run record's. numpy only, like ``evaluate_job``."""
    from onenn.pipeline.experiments import BINARY_EVAL_KEYS
    from onenn.prompts import BINARY_SET_ARRAYS

    trained_with = {k: v for k, v in settings.items() if k not in BINARY_EVAL_KEYS}
    run, weights = load_run(weights_path, run_path, identity, trained_with, 1, needed=("train_size",))
    sizes = {name: run["train_size"] if name == "train" else settings["test_size"] for name in set_paths}
    sets = {
        name: load_prompt_set(path, BINARY_SET_ARRAYS, n=sizes[name], N=run["N"], d=run["d"], K=None)
        for name, path in set_paths.items()
    }

    from onenn.analysis.evaluate import evaluate_binary  # pandas: after the inputs are checked
    from onenn.analysis.tables import run_table

    metrics = evaluate_binary(weights["steps"], weights["W"], sets, run["d"])
    info = {**run, "delta": float(settings["delta"]), "test_size": int(settings["test_size"])}
    save_table(output, run_table(metrics, info, weights["minibatch_loss"], weights["steps"]))
    log.info("evaluated %d saved steps on %s", len(weights["steps"]), ", ".join(sets))


# --------------------------------------------------------------------------------------------------------
# The theory experiments (numpy and scipy)
# --------------------------------------------------------------------------------------------------------


def scaling_job(settings: dict[str, Any], *, experiment: str, output: str, log: logging.Logger) -> None:
    """A ``kind: scaling`` experiment: estimate every point, write one table."""
    from onenn.theory.scaling import scaling_table

    table = scaling_table(settings, experiment)
    save_table(output, table)
    for row in table.itertuples():
        log.info(
            "%s xi=(%g, %g) K=%d prompts=%d: ratio %.4f [%.4f, %.4f], (K-1)/K = %.4f",
            row.panel,
            row.xi1,
            row.xi2,
            row.K,
            row.prompts,
            row.ratio,
            row.ratio_lower,
            row.ratio_upper,
            row.reference,
        )


def landscape_job(settings: dict, *, experiment: str, output: str, log: logging.Logger) -> None:
    """A ``kind: landscape`` experiment: the reduced loss on its grid, with the sample's settings."""
    from onenn.analysis.tables import normalise_types
    from onenn.theory.landscape import LandscapeSettings, landscape

    s = LandscapeSettings.from_dict(settings)
    started = time.perf_counter()
    table = landscape(s)
    table.insert(0, "experiment", experiment)
    for key in ("d", "N", "prompts", "seed"):
        table[key] = getattr(s, key)
    save_table(output, normalise_types(table))
    log.info("landscape: %d points in %.1f s", len(table), time.perf_counter() - started)


#: the first columns of an audit variant's table and of a full-matrix one, in order
AUDIT_FIRST = ("experiment", "variant", "sigma_rule", "sigma", "source", "step", "time")
FULL_MATRIX_FIRST = ("experiment", "variant", "step")


def audit_job(settings: dict, *, identity: dict, output: str, log: logging.Logger) -> None:
    """One sigma of an audit experiment: its five trajectories as a Parquet table with the settings."""
    from onenn.analysis.tables import normalise_types
    from onenn.theory.audit import AuditSettings, run_audit
    from onenn.theory.reduced.thresholds import XI_RATIO_BOUND

    s = AuditSettings.from_dict(settings)
    table = run_audit(s, log)
    info = {**identity, **{k: v for k, v in s.to_dict().items() if k != "sigma"}, "sigma_rule": str(s.sigma)}
    for key, value in info.items():
        table[key] = value
    first = list(AUDIT_FIRST)
    save_table(output, normalise_types(table[first + [c for c in table.columns if c not in first]]))
    end = table[table["source"] == "continuation"].iloc[-1]
    log.info(
        "end (time %.3g): xi1=%.4g xi2=%.4g ratio=%.4f (7/15=%.4f) loss=%.4g",
        end["time"],
        end["xi1"],
        end["xi2"],
        end["xi_ratio"],
        XI_RATIO_BOUND,
        end["reduced_loss"],
    )


def full_matrix_job(settings: dict, *, identity: dict, output: str, log: logging.Logger) -> None:
    """One variant of a full-matrix experiment: both trajectories with the variant's identity and settings."""
    from onenn.analysis.tables import normalise_types
    from onenn.theory.full_matrix import FullMatrixSettings, full_matrix_vs_reduced

    s = FullMatrixSettings.from_dict(settings)
    started = time.perf_counter()
    table = full_matrix_vs_reduced(s)
    for key, value in {**identity, **s.to_dict()}.items():
        table[key] = value
    first = list(FULL_MATRIX_FIRST)
    save_table(output, normalise_types(table[first + [c for c in table.columns if c not in first]]))
    log.info(
        "full matrix vs reduced: %d steps in %.1f s; max |xi - xi_reduced| %.3g, max dist to family %.3g",
        s.steps,
        time.perf_counter() - started,
        table["xi_gap"].max(),
        table["dist_family_active"].max(),
    )


#: the kinds whose jobs write one table per variant (rule ``beyond``)
PER_VARIANT_JOBS = {"audit": audit_job, "full_matrix": full_matrix_job}


def beyond_job(kind: str, settings: dict, *, identity: dict, output: str, log: logging.Logger) -> None:
    """The per-variant job of an ``audit`` or ``full_matrix`` experiment."""
    if kind not in PER_VARIANT_JOBS:
        raise ValueError(f"kind must be one of {', '.join(PER_VARIANT_JOBS)}; got {kind!r}")
    PER_VARIANT_JOBS[kind](settings, identity=identity, output=output, log=log)


# --------------------------------------------------------------------------------------------------------
# Tables, figures, the headline table and the report
# --------------------------------------------------------------------------------------------------------


def table_columns(kind: str) -> dict[str, str]:
    """The columns a table of an experiment of ``kind`` (or of one of its runs or variants) must have, as
    ``onenn.pipeline.inputs.load_checked_table`` takes them; none for the kinds that compute their table."""
    from onenn.analysis.tables import BINARY_RUN_METRICS, ID_COLUMNS, METRICS

    runs = dict.fromkeys(ID_COLUMNS, ANY)
    return {
        "train": {**runs, **dict.fromkeys(METRICS, NUMBER)},
        "binary": {**runs, **dict.fromkeys(BINARY_RUN_METRICS, NUMBER)},
        "audit": dict.fromkeys(AUDIT_FIRST, ANY),
        "full_matrix": dict.fromkeys(FULL_MATRIX_FIRST, ANY),
    }.get(kind, {})


def aggregate_job(paths: Sequence[str], output: str, log: logging.Logger, kind: str = "") -> None:
    """Concatenate per-run (or per-variant) tables of an experiment of ``kind`` into one experiment table."""
    from onenn.analysis.tables import concat_tables

    tables = [load_checked_table(p, table_columns(kind)) for p in paths]  # all checked before any is used
    table = concat_tables(tables)
    save_table(output, table)
    log.info("aggregated %d runs, %d rows into %s", len(paths), len(table), output)


def table_job(
    kind: str, inputs: Sequence[str], settings: dict[str, Any], *, experiment: str, output: str, log: logging.Logger
) -> None:
    """An experiment's table, by kind (``experiments.TABLE_SOURCES``): its runs' or variants' tables
    concatenated, or, for the kinds without runs (``scaling``, ``landscape``), computed from ``settings``."""
    from onenn.pipeline.experiments import TABLE_SOURCES

    if kind not in TABLE_SOURCES:
        raise ValueError(f"kind must be one of {', '.join(TABLE_SOURCES)}; got {kind!r}")
    if TABLE_SOURCES[kind] != "settings":
        aggregate_job(inputs, output, log=log, kind=kind)
    elif kind == "scaling":
        scaling_job(settings, experiment=experiment, output=output, log=log)
    elif kind == "landscape":
        landscape_job(settings, experiment=experiment, output=output, log=log)
    else:
        raise ValueError(f"no table job computes kind {kind!r} (TABLE_SOURCES names it, table_job does not)")


def figure_job(
    figure: str,
    table_path: str,
    style: dict,
    outputs: Sequence[str],
    *,
    group_by: Sequence[str],
    log: logging.Logger,
) -> None:
    """Draw figure ``figure`` of an experiment table, its curves grouped by the settings ``group_by``, and save
    it to every path in ``outputs`` (PNG, PDF)."""
    from onenn.analysis.plots import PlotStyle, render

    render(figure, load_checked_table(table_path), PlotStyle(**style), list(outputs), group_by)
    log.info("drew %s into %s", figure, ", ".join(map(str, outputs)))


def summary_job(
    paths: dict[str, str], kinds: dict[str, str], *, table_path: str, markdown_path: str, log: logging.Logger
) -> None:
    """Read every experiment table, write the headline table twice (Parquet and Markdown)."""
    from onenn.analysis.summary import summarise, to_markdown

    tables = {name: load_checked_table(path, table_columns(kinds[name])) for name, path in paths.items()}
    summary = summarise(tables, kinds)
    save_table(table_path, summary)
    write_with(markdown_path, lambda tmp: tmp.write_text(to_markdown(summary)))
    log.info("summarised %d experiments into %d rows", len(paths), len(summary))


def claims_job(
    claims_path: str,
    schema_path: str,
    known: dict[str, dict[str, Any]],
    tables: dict[str, str],
    *,
    table_path: str,
    markdown_path: str,
    log: logging.Logger,
) -> None:
    """Score every claim of the claims file against the tables this run has; write the scorecard twice (Parquet
    and Markdown)."""
    from onenn.analysis.claims import scorecard, to_markdown
    from onenn.pipeline.claims import load_claims

    claims = load_claims(claims_path, known, schema_path)
    read = {name: load_checked_table(path) for name, path in tables.items()}
    card = scorecard(claims, read)
    save_table(table_path, card)
    write_with(markdown_path, lambda tmp: tmp.write_text(to_markdown(card, read), encoding="utf-8"))
    log.info("scored %d claims: %s", len(card), card["verdict"].value_counts().to_dict())


def report_page_job(markdown_path: str, html_path: str, *, title: str, log: logging.Logger) -> None:
    """A table's Markdown (the headline table, the scorecard) as an HTML page of the report."""
    from onenn.analysis.report import markdown_to_html

    page = markdown_to_html(load_text(markdown_path), title=title)
    write_with(html_path, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    log.info("wrote %s", html_path)
