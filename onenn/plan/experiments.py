"""From the workflow's config to runs: experiments, their variants and the settings of every job (docs/guide.md).
A run's settings are ``defaults``, then its experiment's keys, then its variant's. No torch here."""

import itertools
from dataclasses import dataclass
from typing import Any

from onenn.base import paths
from onenn.base.columns import format_value, variant_name
from onenn.base.settings import PLAN_KEYS, schema
from onenn.plan.kinds import EVAL_KEYS, kind_named

#: keys of an experiment that are not run settings: those of every experiment, and the scaling kind's panels
EXPERIMENT_KEYS = (*schema()["$defs"]["experiment"]["properties"], "panels")
PAPER_EXPERIMENTS = paths.PAPER_EXPERIMENTS
#: where a value was written in the config, such as ``("experiments", "convergence", "sweep", "N", 1)``
KeyPath = tuple[str | int, ...]


def experiment_names(config: dict, kind: str | None = None) -> list[str]:
    """Experiments of the config, in order, optionally only those of one ``kind``."""
    if kind is not None:
        kind_named(kind)
    return [name for name, exp in config["experiments"].items() if kind is None or exp["kind"] == kind]


def kinds(config: dict) -> dict[str, str]:
    """Experiment name -> its kind, in config order."""
    return {name: exp["kind"] for name, exp in config["experiments"].items()}


@dataclass(frozen=True)
class Variant:
    """A variant as declared: its name, its overrides, and the key paths of it, each override and its name."""

    name: str
    overrides: dict[str, Any]
    where: KeyPath
    paths: dict[str, KeyPath]
    named_at: KeyPath


def declared_variants(config: dict, experiment: str) -> list[Variant]:
    """Every variant in order, duplicates kept: the sweep's product, then ``variants``, else ``default``."""
    exp = config["experiments"][experiment]
    base: KeyPath = ("experiments", experiment)
    out = []
    sweep = exp.get("sweep") or {}
    for picks in itertools.product(*(list(enumerate(values)) for values in sweep.values())) if sweep else ():
        overrides = {k: v for k, (_, v) in zip(sweep, picks)}
        paths = {k: (*base, "sweep", k, i) for k, (i, _) in zip(sweep, picks)}
        out.append(Variant(variant_name(overrides), overrides, (*base, "sweep"), paths, (*base, "sweep")))
    for i, entry in enumerate(exp.get("variants") or []):
        overrides = {k: v for k, v in entry.items() if k != "name"}
        where = (*base, "variants", i)
        paths = {k: (*where, k) for k in overrides}
        named_at = (*where, "name") if "name" in entry else where
        out.append(Variant(entry.get("name") or variant_name(overrides), overrides, where, paths, named_at))
    if not sweep and not exp.get("variants"):
        out.append(Variant("default", {}, base, {}, base))
    return out


def variants(config: dict, experiment: str) -> dict[str, dict[str, Any]]:
    """Variant name -> the settings it overrides."""
    return {v.name: v.overrides for v in declared_variants(config, experiment)}


def resolved_settings(config: dict, experiment: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """``defaults``, updated by the experiment's own keys, updated by a variant's ``overrides``."""
    exp = config["experiments"][experiment]
    return {**config["defaults"], **{k: v for k, v in exp.items() if k not in EXPERIMENT_KEYS}, **overrides}


def settings(config: dict, experiment: str, variant: str) -> dict[str, Any]:
    return resolved_settings(config, experiment, variants(config, experiment)[variant])


def group_by(config: dict, experiment: str) -> list[str]:
    """The settings whose value differs between the experiment's variants: what its figure groups its curves by."""
    found = declared_variants(config, experiment)
    resolved = [resolved_settings(config, experiment, v.overrides) for v in found]
    keys = dict.fromkeys(k for v in found for k in v.overrides)
    return [k for k in keys if k not in PLAN_KEYS and len({format_value(s[k]) for s in resolved}) > 1]


def job_settings(config: dict, experiment: str, variant: str = "default") -> dict[str, Any]:
    """What one variant's job (kind audit) depends on: its kind's settings (a scaling job's: panels)."""
    exp = config["experiments"][experiment]
    kind = kind_named(exp["kind"])
    s = {**settings(config, experiment, variant), **({"panels": exp["panels"]} if "panels" in exp else {})}
    keys = (*kind.settings_keys, *(("panels",) if kind.name == "scaling" else ()))
    missing = [k for k in keys if k not in s]
    if missing:
        raise ValueError(f"experiments.{experiment} (kind {kind.name}) needs {', '.join(missing)}")
    return {k: s[k] for k in keys}


def train_settings(config: dict, experiment: str, variant: str, seed: int) -> dict[str, Any]:
    """What one run (kind train or binary) depends on: its kind's settings and its ``seed``."""
    return {**job_settings(config, experiment, variant), "seed": int(seed)}


def eval_keys(kind: str) -> tuple[str, ...]:
    """What the evaluation of a run of ``kind`` depends on: ``EVAL_KEYS``, and a multiclass run's classes and loss."""
    return (*(("K", "loss", "c") if kind == "train" else ()), *EVAL_KEYS)


def eval_settings(config: dict, experiment: str, variant: str) -> dict[str, Any]:
    s = settings(config, experiment, variant)
    return {k: s[k] for k in eval_keys(config["experiments"][experiment]["kind"])}


def table_settings(config: dict, experiment: str) -> dict[str, Any]:
    """What an experiment's table job depends on besides its inputs: the settings of a kind it computes."""
    kind = kind_named(config["experiments"][experiment]["kind"])
    return job_settings(config, experiment) if kind.table_source == "settings" else {}


def runs(config: dict, experiment: str) -> list[tuple[str, int]]:
    """Every ``(variant, seed)`` of an experiment."""
    seeds = {v: int(settings(config, experiment, v)["seeds"]) for v in variants(config, experiment)}
    return [(v, seed) for v, n in seeds.items() for seed in range(n)]


def table_inputs(config: dict, experiment: str) -> list[str]:
    """The files an experiment's table is made from (none for the kinds whose table job computes it)."""
    source = kind_named(config["experiments"][experiment]["kind"]).table_source
    if source == "runs":
        return [paths.RUN_METRICS.format(experiment=experiment, variant=v, seed=s) for v, s in runs(config, experiment)]
    if source == "variants":
        return [paths.VARIANT_TABLE.format(experiment=experiment, variant=v) for v in variants(config, experiment)]
    return []


def delta_name(delta: float) -> str:
    """The margin as a test set's path names it: ``0.1``, or all its digits where the short form is another number."""
    short = format_value(float(delta))
    return short if float(short) == float(delta) else repr(float(delta))


def delta_named(config: dict, name: str) -> float:
    """The margin of a separated test set of ``config`` whose path name is ``name``; an unknown name is an error."""
    known = {
        delta_name(s["delta"]): float(s["delta"])
        for kind in ("train", "binary")
        for experiment in experiment_names(config, kind=kind)
        for s in (settings(config, experiment, v) for v in variants(config, experiment))
        if s.get("delta") is not None
    }
    if name not in known:
        raise ValueError(
            f"no experiment of this configuration has a separated test set with delta named {name!r} "
            f"(there are: {', '.join(sorted(known)) or 'none'})"
        )
    return known[name]


def test_set_path(test_set: str, s: dict[str, Any]) -> str:
    """Where the test set of a run's settings lives; one job per distinct path, shared by all experiments."""
    where = {"d": s["d"], "N": s["N"], "K": s["K"], "size": s["test_size"]}
    if test_set == "uniform":
        return paths.UNIFORM_SET.format(**where)
    if test_set == "separated":
        return paths.SEPARATED_SET.format(**where, delta=delta_name(s["delta"]))
    raise ValueError(f"test_set must be one of uniform, separated; got {test_set!r}")


def binary_set_path(test_set: str, s: dict[str, Any]) -> str:
    """Where a binary prompt set lives: the fixed training set (``train_size`` prompts) or a test set."""
    where = {"d": s["d"], "N": s["N"], "labels": s["labels"]}
    if test_set == "separated":
        return paths.BINARY_SEPARATED_SET.format(**where, delta=delta_name(s["delta"]), size=s["test_size"])
    if test_set not in paths.BINARY_SET_TEST_SETS:
        allowed = ", ".join(paths.BINARY_SET_TEST_SETS)
        raise ValueError(f"test_set must be one of {allowed}, separated; got {test_set!r}")
    size = s["train_size"] if test_set == "train" else s["test_size"]
    return paths.BINARY_SET.format(**where, test_set=test_set, size=size)
