"""onenn from Python, without Snakemake (docs/guide.md#the-api): the workflow's own jobs, run in a temporary folder
with the configuration's check and resolution; no second implementation."""

from __future__ import annotations

import inspect
import logging
import tempfile
from collections.abc import Iterable
from contextlib import closing, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from onenn import API
from onenn.base import paths
from onenn.base.columns import TEST_SETS, format_value, variant_name
from onenn.base.io import DamagedFile, load_arrays, load_json, save_arrays, save_json
from onenn.base.progress import ProgressBar
from onenn.base.settings import PLAN_KEYS, section
from onenn.jobs.inputs import ANY, WEIGHTS_ARRAYS, load_checked_table
from onenn.plan import experiments as ex
from onenn.plan.validate import ConfigError, Problem, name_problems, unknown, validate_config

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ConfigError", "Loaded", "Run", "TrainResult", *API]  # noqa: PLE0604 (API: what onenn re-exports)

log = logging.getLogger("onenn.api")


def default_settings() -> dict[str, Any]:
    """Every setting of a training run with its default: the keys of ``defaults`` in ``config.yaml``."""
    return {k: prop["default"] for name in ("train", "evaluation") for k, prop in section(name).items()}


@dataclass(frozen=True)
class Run:
    """One seed's run: the weights ``W`` (S, D, D) at the saved steps ``saved_steps`` (S,), the minibatch loss at
    every step (steps,), and the run record the training job writes (settings, identity, versions, code)."""

    seed: int
    saved_steps: np.ndarray
    W: np.ndarray
    minibatch_loss: np.ndarray
    record: dict[str, Any]


@dataclass(frozen=True)
class TrainResult:
    """What ``train`` returns: the resolved settings (every key of ``config.yaml``'s ``defaults``), the
    experiment and variant the runs are named by, the test sets' base seed, and one ``Run`` per seed."""

    settings: dict[str, Any]
    experiment: str
    variant: str
    test_set_seed: int
    runs: tuple[Run, ...] = field(default=())

    @property
    def seeds(self) -> list[int]:
        return [run.seed for run in self.runs]

    def run(self, seed: int = 0) -> Run:
        for run in self.runs:
            if run.seed == seed:
                return run
        raise KeyError(f"no run of seed {seed} (seeds: {', '.join(map(str, self.seeds))})")


def _settings_as_keywords(function: Any) -> Any:
    """Give ``function`` (``**settings``) every setting as a keyword parameter with its default, for ``help()``."""
    parameters = [p for p in inspect.signature(function).parameters.values() if p.kind != p.VAR_KEYWORD]
    keyword = inspect.Parameter.KEYWORD_ONLY
    keywords = [inspect.Parameter(k, keyword, default=v, annotation=type(v)) for k, v in default_settings().items()]
    function.__signature__ = inspect.signature(function).replace(parameters=parameters + keywords)
    return function


@_settings_as_keywords
def train(
    *,
    seed: int | Iterable[int] | None = None,
    experiment: str = "api",
    variant: str = "default",
    test_set_seed: int | None = None,
    threads: int = 1,
    progress: bool = True,
    **settings: Any,
) -> TrainResult:
    """Train SGD runs of one setting, as the workflow's ``train`` rule does (``settings``: config.yaml's ``defaults``).
    See docs/guide.md for the arguments; the numbers are the same with or without ``progress``."""
    from onenn.jobs.train import train_job

    for key in (*ex.EXPERIMENT_KEYS, "seed"):
        if key in settings:
            raise TypeError(f"{key!r} is not a run setting here (train's seed is its own argument, seed=)")
    accepted = default_settings()  # suggested by the message: the settings train accepts, not a config's other keys
    problems = [unknown((key,), "setting", key, sorted(accepted)) for key in settings if key not in accepted]
    problems += name_problems(("variant",), variant, "variant")  # the workflow's rule: it names a folder
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        problems.append(Problem(("threads",), f"must be a positive integer; got {threads!r}"))
    if problems:
        raise ConfigError(problems, what="arguments")
    seed_of_sets = section("#/properties/test_sets")["seed"]["default"] if test_set_seed is None else test_set_seed
    # one training experiment with settings as its own keys, checked by the workflow's check
    config = {
        "defaults": accepted,
        "test_sets": {"seed": seed_of_sets},
        "plots": {},
        "experiments": {experiment: {"kind": "train", "figure": "sweep", **settings}},
    }
    validate_config(config)
    resolved = ex.settings(config, experiment, "default")
    if seed is None:
        seeds = list(range(int(resolved["seeds"])))
    else:
        seeds = [seed] if isinstance(seed, int) else list(seed)
        if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
            raise ValueError(f"seed must be a non-negative integer or a list of them; got {seed!r}")
        resolved["seeds"] = len(seeds)  # what was trained, whatever seeds= said
    runs = []
    with tempfile.TemporaryDirectory(prefix="onenn-train-") as tmp:
        for s in seeds:
            folder = Path(tmp) / f"seed{s}"  # made by the job's first write
            bar = ProgressBar(f"{experiment} {variant} seed {s}", int(resolved["steps"])) if progress else None
            with closing(bar.bar) if bar else nullcontext():
                train_job(
                    ex.train_settings(config, experiment, "default", s),
                    identity={"experiment": experiment, "variant": variant, "seed": str(s)},
                    weights_path=str(folder / "weights.npz"),
                    run_path=str(folder / "run.json"),
                    threads=threads,
                    log=log,
                    progress=bar,
                )
            arrays = load_arrays(folder / "weights.npz")
            runs.append(Run(s, *(arrays[name] for name in WEIGHTS_ARRAYS), record=load_json(folder / "run.json")))
    return TrainResult(resolved, experiment, variant, seed_of_sets, tuple(runs))


def evaluate(
    result: TrainResult | Iterable[TrainResult], test_set: str | Iterable[str] = TEST_SETS, progress: bool = True
) -> pd.DataFrame:
    """Metrics of every saved step of every run of ``result`` (or several) on ``test_set``, as the workflow's table."""
    from onenn.analysis.tables import concat_tables
    from onenn.base.io import load_table
    from onenn.jobs.datasets import test_set_job
    from onenn.jobs.evaluate import evaluate_job

    asked = [test_set] if isinstance(test_set, str) else list(test_set)
    names = [name for name in TEST_SETS if name in asked]  # the order the workflow hands them to its job
    if set(asked) - set(TEST_SETS) or not names:
        raise ValueError(f"test_set must be one or more of {', '.join(TEST_SETS)}; got {test_set!r}")
    if not isinstance(result, TrainResult):
        return concat_tables(evaluate(one, test_set, progress) for one in distinct_variants(list(result)))
    s = result.settings
    tables = []
    bar = ProgressBar(f"evaluate {result.experiment} {result.variant}", len(result.runs), "run") if progress else None
    with tempfile.TemporaryDirectory(prefix="onenn-evaluate-") as tmp, closing(bar.bar) if bar else nullcontext():
        sets = {name: str(Path(tmp) / f"{name}.npz") for name in names}
        for name, path in sets.items():
            delta = float(s["delta"]) if name == "separated" else None
            test_set_job(name, s["test_size"], s["d"], s["N"], s["K"], delta, result.test_set_seed, path, log)
        for run in result.runs:
            folder = Path(tmp) / f"seed{run.seed}"
            save_arrays(folder / "weights.npz", **{name: getattr(run, name) for name in WEIGHTS_ARRAYS})
            save_json(folder / "run.json", run.record)
            evaluate_job(
                {k: s[k] for k in ex.eval_keys("train")},
                identity={"experiment": result.experiment, "variant": result.variant, "seed": str(run.seed)},
                weights_path=str(folder / "weights.npz"),
                run_path=str(folder / "run.json"),
                test_set_paths=sets,
                output=str(folder / "metrics.parquet"),
                log=log,
            )
            tables.append(load_table(folder / "metrics.parquet"))
            if bar:
                bar.show(len(tables), len(result.runs), f"seed {run.seed}")
    return tables[0] if len(tables) == 1 else concat_tables(tables)


def distinct_variants(results: list[TrainResult]) -> list[TrainResult]:
    """``results``, no two of one experiment and variant differing in a setting (never pooled as seeds of one): unnamed
    ones named by the settings that differ, as a sweep's variants; named ones that differ, or a seed twice, refused."""
    for rename in (True, False):  # and once more: a name given here may be one given by the user
        groups: dict[tuple[str, str], list[int]] = {}
        for i, r in enumerate(results):
            groups.setdefault((r.experiment, r.variant), []).append(i)
        for (experiment, variant), members in groups.items():
            mine = [results[i] for i in members]
            values = {k: {format_value(r.settings[k]) for r in mine} for k in mine[0].settings if k not in PLAN_KEYS}
            differ = [k for k, v in values.items() if len(v) > 1]
            names = [variant_name({k: r.settings[k] for k in differ}) for r in mine]
            seeds, named = [seed for r in mine for seed in r.seeds], ", ".join(dict.fromkeys(names))
            if differ and rename and variant == "default":
                log.warning("%s: the unnamed results differ in %s: variants %s", experiment, ", ".join(differ), named)
                for i, name in zip(members, names):
                    runs = tuple(replace(run, record={**run.record, "variant": name}) for run in results[i].runs)
                    results[i] = replace(results[i], variant=name, runs=runs)
            elif differ or len(set(seeds)) < len(seeds):
                name_them = f"name each, train(..., variant=...): {named}"
                why = f"differ in {', '.join(differ)}: {name_them}" if differ else f"repeat a seed: {seeds}"
                raise ConfigError([Problem((experiment,), f"the results of variant {variant!r} {why}")], what="results")
    return results


@dataclass(frozen=True)
class Loaded:
    """A finished run's files as data: tables, run records, headline table and scorecard (``None`` if absent)."""

    tables: dict[str, pd.DataFrame]
    runs: pd.DataFrame
    summary: pd.DataFrame | None
    scorecard: pd.DataFrame | None


def load(results_dir: str | Path = "results", experiment: str | Iterable[str] | None = None) -> Loaded:
    """The tables, run records, headline table and scorecard in ``results_dir``, checked; ``experiment``: only those."""
    import pandas as pd

    root = Path(results_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is no folder: load needs the results/ folder of a finished run")

    def under(pattern: str) -> Path:  # a path pattern of onenn.base.paths (results/...) under root
        return root / pattern.removeprefix("results/")

    fixed = (paths.SUMMARY_TABLE, paths.CLAIMS_TABLE)
    if experiment is None:
        found = sorted(p.stem for p in under(paths.TABLE).parent.glob("*.parquet"))
        names = [name for name in found if name not in {under(p).stem for p in fixed}]
    else:
        names = [experiment] if isinstance(experiment, str) else list(experiment)
        problems = [p for name in names for p in name_problems(("experiment",), name, "experiment")]
        if problems:
            raise ConfigError(problems, what="arguments")
    tables = {}
    for name in names:  # every kind's table names its experiment: another experiment's, or a foreign one, is refused
        path = under(paths.TABLE.format(experiment=name))
        tables[name] = load_checked_table(path, {"experiment": ANY})
        found = sorted(set(map(str, tables[name]["experiment"])))
        if found != [name]:
            raise DamagedFile(path, f"it holds experiment {', '.join(found) or 'none'}, not {name!r}")
    record = paths.RUN_RECORD.removeprefix("results/")
    records = [
        load_json(path)
        for name in (names if experiment is not None else ["*"])
        for path in sorted(root.glob(record.format(experiment=name, variant="*", seed="*")))
    ]
    optional = [load_checked_table(under(p)) if under(p).exists() else None for p in fixed]
    return Loaded(tables, pd.DataFrame(records), *optional)


def family_weights(xi1: float, xi2: float, d: int = 8, K: int = 3) -> np.ndarray:
    """The weights ``diag{xi1 I_d, 0_K, -xi2}`` (D, D) of the two-parameter family (``onenn.maths.family``)."""
    from onenn.maths.family import family_matrix

    return family_matrix(xi1, xi2, d, K)


def reduced_loss(
    xi1: float, xi2: float, *, d: int = 8, N: int = 32, K: int | None = None, prompts: int = 16384, seed: int = 0
) -> float:
    """The reduced loss ``L_bin(xi1, xi2)`` (``L_MC`` with ``K``) on ``prompts`` sampled prompts, the sample of
    the landscape experiment of the same ``d, N, prompts, seed`` (``onenn.theory.reduced.loss``)."""
    from onenn.maths.stream import numpy_generator
    from onenn.theory.reduced.loss import reduced_loss as loss
    from onenn.theory.reduced.sampling import sample_inner_products

    return loss(xi1, xi2, sample_inner_products(prompts, N, d, numpy_generator(seed, "landscape")), K)


def population_flow(
    sigma: float | str = 3.0,
    *,
    d: int = 8,
    N: int = 32,
    time_end: float = 1e20,
    times: Iterable[float] | None = None,
    t1_nodes: int = 128,
    gap_nodes: int = 64,
    third_nodes: int = 8,
    seed: int = 0,
    progress: bool = True,
) -> pd.DataFrame:
    """The audit's population gradient flow from ``(0, sigma)`` to ``time_end``, one row per time in ``times``
    (else 60 log-spaced): ``time, xi1, xi2, loss, boundary, stuck_mass, mass``; see docs/guide.md."""
    import pandas as pd

    from onenn.theory.audit import resolve_sigma
    from onenn.theory.reduced.dynamics import log_times
    from onenn.theory.reduced.population import boundary, quadrature, stuck_mass
    from onenn.theory.reduced.population import population_flow as flow

    start = resolve_sigma(sigma, N, d)
    record = log_times(1.0, time_end, 60, decades=True) if times is None else np.asarray(list(times), dtype=float)
    q = quadrature(N, d, t1_nodes, gap_nodes, seed, third_nodes=third_nodes)
    bar = ProgressBar(f"population flow to t = {time_end:.3g}", 100, "%") if progress else None
    with closing(bar.bar) if bar else nullcontext():
        tr = flow(0.0, start, time_end, q, record, progress=bar.flow if bar else None)
    points = list(zip(tr.xi1.tolist(), tr.xi2.tolist(), strict=True))
    return pd.DataFrame(
        {"time": tr.time, "xi1": tr.xi1, "xi2": tr.xi2, "loss": tr.loss}
        | {"boundary": [boundary(a, b) for a, b in points], "stuck_mass": [stuck_mass(a, b, N, d) for a, b in points]}
        | {"mass": tr.mass}
    )
