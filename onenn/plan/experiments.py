"""From the workflow's config to runs: experiments, their variants and the settings of every run.

The settings of a run are ``defaults``, updated by the experiment's own keys, updated by the variant's keys.
A variant comes from ``sweep`` (the Cartesian product of lists) or from ``variants`` (an explicit list);
its name is ``key=value`` pairs joined by ``+`` unless it gives a ``name``. Names are looked up, never parsed.
The variants are walked once, by ``declared_variants``, which also says where each was written: the configuration
check (``onenn.plan.validate``) names those key paths.
No ``,`` in names: Snakemake hands a job to a cluster node as ``--target-jobs rule:key=value,key=value`` and
splits that at every comma (a variant ``epsilon=3,noise_blocks=label`` would arrive as ``epsilon=3``).
No torch here: the Snakefile imports this module.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from onenn.base import paths
from onenn.base.columns import format_value, variant_name
from onenn.plan.kinds import (
    BINARY_KEYS,
    KINDS,
    SCALING_KEYS,
    TRAIN_KEYS,
    kind_named,
)

#: keys of an experiment that are not run settings
EXPERIMENT_KEYS = ("kind", "figure", "sweep", "variants", "description", "panels")
#: the multiclass paper's experiments 1–6 (its section 5), by their names in config.yaml
PAPER_EXPERIMENTS = (
    "convergence",
    "scaling_identity",
    "distribution_shift",
    "number_of_classes",
    "diagonal_init",
    "loss_function",
)


def experiment_names(config: dict, kind: str | None = None) -> list[str]:
    """Experiments of the config, in order, optionally only those of one ``kind``."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    return [name for name, exp in config["experiments"].items() if kind is None or exp["kind"] == kind]


def kinds(config: dict) -> dict[str, str]:
    """Experiment name -> its kind, in config order."""
    return {name: exp["kind"] for name, exp in config["experiments"].items()}


#: where a value was written in the config, such as ``("experiments", "convergence", "sweep", "N", 1)``
KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Variant:
    """A variant of an experiment as the config declares it: its name, the settings it overrides, and where it and
    each of its overrides were written (the configuration check names these key paths)."""

    name: str
    overrides: dict[str, Any]
    where: KeyPath
    paths: dict[str, KeyPath] = field(default_factory=dict)
    name_path: KeyPath | None = None  # where its name was written, if it was

    @property
    def named_at(self) -> KeyPath:
        return self.name_path or self.where


def declared_variants(config: dict, experiment: str) -> list[Variant]:
    """Every variant of an experiment in declaration order, duplicates kept: the Cartesian product of ``sweep``,
    then the explicit ``variants``, or the one variant ``default`` where there are neither."""
    exp = config["experiments"][experiment]
    base: KeyPath = ("experiments", experiment)
    out = []
    sweep = exp.get("sweep") or {}
    keys = list(sweep)
    for picks in itertools.product(*(list(enumerate(sweep[k])) for k in keys)) if keys else ():
        overrides = {k: v for k, (_, v) in zip(keys, picks)}
        paths = {k: (*base, "sweep", k, i) for k, (i, _) in zip(keys, picks)}
        out.append(Variant(variant_name(overrides), overrides, (*base, "sweep"), paths))
    for i, entry in enumerate(exp.get("variants") or []):
        overrides = {k: v for k, v in entry.items() if k != "name"}
        where = (*base, "variants", i)
        paths = {k: (*where, k) for k in overrides}
        name_path = (*where, "name") if "name" in entry else None
        out.append(Variant(entry.get("name") or variant_name(overrides), overrides, where, paths, name_path))
    if not sweep and not exp.get("variants"):
        out.append(Variant("default", {}, base))
    return out


def variants(config: dict, experiment: str) -> dict[str, dict[str, Any]]:
    """Variant name -> the settings it overrides (``declared_variants``; the configuration check refuses a name
    declared twice)."""
    return {v.name: v.overrides for v in declared_variants(config, experiment)}


def resolved_settings(config: dict, experiment: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """``defaults``, updated by the experiment's own keys, updated by a variant's ``overrides``."""
    exp = config["experiments"][experiment]
    resolved = dict(config["defaults"])
    resolved.update({k: v for k, v in exp.items() if k not in EXPERIMENT_KEYS})
    resolved.update(overrides)
    return resolved


def settings(config: dict, experiment: str, variant: str) -> dict[str, Any]:
    """The resolved settings of one variant of an experiment."""
    return resolved_settings(config, experiment, variants(config, experiment)[variant])


#: figures that draw a training experiment's table, their curves grouped by ``group_by`` (``sweep``: any
#: training experiment; the others keep the layout of their paper experiment)
#: keys a variant may set that say how many runs it has, not what a run does: never a grouping of the curves
NOT_GROUPED = ("seeds",)


def group_by(config: dict, experiment: str) -> list[str]:
    """The settings that tell the experiment's variants apart, in the order they are declared (the sweep's
    keys, then those of the explicit variants): what its figure groups its curves by. Only settings whose value
    differs between variants; empty for an experiment of one variant. The figure rule passes it in its params,
    so a change of the sweep reruns the figure."""
    exp = config["experiments"][experiment]
    declared = [*(exp.get("sweep") or {}), *(k for entry in exp.get("variants") or [] for k in entry if k != "name")]
    resolved = [settings(config, experiment, v) for v in variants(config, experiment)]
    return [
        k for k in dict.fromkeys(declared) if k not in NOT_GROUPED and len({format_value(s[k]) for s in resolved}) > 1
    ]


def train_settings(config: dict, experiment: str, variant: str, seed: int) -> dict[str, Any]:
    s = settings(config, experiment, variant)
    return {**{k: s[k] for k in TRAIN_KEYS}, "seed": int(seed)}


def scaling_settings(config: dict, experiment: str) -> dict[str, Any]:
    """What a ``kind: scaling`` job depends on: ``d``, ``N``, the sampling ``seed``, ``ci_level`` and ``panels``."""
    exp = config["experiments"][experiment]
    if exp["kind"] != "scaling":
        raise ValueError(f"experiments.{experiment} has kind {exp['kind']!r}; scaling settings need kind 'scaling'")
    if "panels" not in exp:
        raise ValueError(f"experiments.{experiment}.panels is required for kind 'scaling'")
    s = settings(config, experiment, "default")
    missing = [k for k in SCALING_KEYS if k not in s]
    if missing:
        raise ValueError(f"experiments.{experiment} needs {', '.join(missing)} (kind 'scaling')")
    return {**{k: s[k] for k in SCALING_KEYS}, "panels": exp["panels"]}


def runs(config: dict, experiment: str) -> list[tuple[str, int]]:
    """Every ``(variant, seed)`` of an experiment."""
    return [
        (variant, seed)
        for variant in variants(config, experiment)
        for seed in range(int(settings(config, experiment, variant)["seeds"]))
    ]


def delta_name(delta: float) -> str:
    """The margin ``delta`` as it appears in a test set's path: ``0.1`` (``format_value``), or all its digits
    (``0.123456789``) where the short form would name another number. Only a name: the job gets the number itself
    through its params (``delta_named``), never by reading it back from the path."""
    short = format_value(float(delta))
    return short if float(short) == float(delta) else repr(float(delta))


def deltas(config: dict) -> dict[str, float]:
    """``delta_name(delta) -> delta`` for every margin a separated test set of this configuration has: those of
    every variant of the experiments that train (multiclass and binary)."""
    found = {}
    for kind in ("train", "binary"):
        for experiment in experiment_names(config, kind=kind):
            for variant in variants(config, experiment):
                delta = settings(config, experiment, variant).get("delta")
                if delta is not None:
                    found[delta_name(delta)] = float(delta)
    return found


def delta_named(config: dict, name: str) -> float:
    """The margin whose path name is ``name`` (``delta_name``); a name no experiment of ``config`` uses is an error
    naming those there are."""
    known = deltas(config)
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


def run_paths(config: dict, experiment: str, pattern: str) -> list[str]:
    """``pattern`` (a run's file, e.g. ``paths.RUN_METRICS``) for every run of an experiment."""
    return [pattern.format(experiment=experiment, variant=v, seed=seed) for v, seed in runs(config, experiment)]


# ----------------------------------------------------------------------------------------------------------
# Beyond the paper (docs/method.md §7): the binary experiment, the landscape, the audit and full-matrix GD
# ----------------------------------------------------------------------------------------------------------


def kind_settings(config: dict, experiment: str, variant: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """The keys of one variant's resolved settings a job of the experiment's kind needs; a missing one is an
    error naming the experiment."""
    s = settings(config, experiment, variant)
    missing = [k for k in keys if k not in s]
    if missing:
        kind = config["experiments"][experiment]["kind"]
        raise ValueError(f"experiments.{experiment} (kind {kind}) needs {', '.join(missing)}")
    return {k: s[k] for k in keys}


def binary_settings(config: dict, experiment: str, variant: str, seed: int) -> dict[str, Any]:
    return {**kind_settings(config, experiment, variant, BINARY_KEYS), "seed": int(seed)}


def binary_set_path(test_set: str, s: dict[str, Any]) -> str:
    """Where a binary prompt set lives: the fixed training set (``train_size`` prompts) or a test set."""
    where = {"d": s["d"], "N": s["N"], "labels": s["labels"]}
    if test_set == "separated":
        return paths.BINARY_SEPARATED_SET.format(**where, delta=delta_name(s["delta"]), size=s["test_size"])
    if test_set not in paths.BINARY_SET_TEST_SETS:
        raise ValueError(
            f"test_set must be one of {', '.join(paths.BINARY_SET_TEST_SETS)}, separated; got {test_set!r}"
        )
    size = s["train_size"] if test_set == "train" else s["test_size"]
    return paths.BINARY_SET.format(**where, test_set=test_set, size=size)


# ----------------------------------------------------------------------------------------------------------
# Jobs by kind: the per-variant jobs and the experiment's table
# ----------------------------------------------------------------------------------------------------------


def variant_settings(config: dict, experiment: str, variant: str) -> dict[str, Any]:
    """What the per-variant job of an ``audit`` or ``full_matrix`` experiment depends on."""
    kind = kind_named(config["experiments"][experiment]["kind"])
    if kind.table_source != "variants":
        per_variant = [k.name for k in KINDS.values() if k.table_source == "variants"]
        raise ValueError(
            f"experiments.{experiment} has kind {kind.name!r}; per-variant jobs need one of {', '.join(per_variant)}"
        )
    return kind_settings(config, experiment, variant, kind.settings_keys)


def table_inputs(config: dict, experiment: str) -> list[str]:
    """The files an experiment's table is made from (none for the kinds whose table job computes it)."""
    source = kind_named(config["experiments"][experiment]["kind"]).table_source
    if source == "runs":
        return run_paths(config, experiment, paths.RUN_METRICS)
    if source == "variants":
        return [paths.VARIANT_TABLE.format(experiment=experiment, variant=v) for v in variants(config, experiment)]
    return []


def table_settings(config: dict, experiment: str) -> dict[str, Any]:
    """What the table job of an experiment depends on besides its inputs: the settings of the kinds it computes
    (``scaling``, ``landscape``); nothing for those it concatenates."""
    kind = kind_named(config["experiments"][experiment]["kind"])
    if kind.name == "scaling":
        return scaling_settings(config, experiment)
    if kind.table_source == "settings":
        return kind_settings(config, experiment, "default", kind.settings_keys)
    return {}
