"""Check the workflow's config before any job runs; every problem names its key path, the value and what is
allowed. No torch: the Snakefile calls ``validate_config`` right after reading the config.

Two layers. The JSON schema (``workflow/schemas/config.schema.yaml``) gives every key a type, bounds and an
enumeration, and rejects unknown keys. This module adds what a schema cannot say:

- numbers are finite (YAML ``.nan`` and ``.inf`` are floats) and integers are integers (``16``, not ``16.0``);
- a sweep or variant entry may only set settings its experiment accepts, and each value obeys that setting's
  schema (``K: [1]`` fails as ``defaults: {K: 1}`` does);
- variant names are distinct folders, no two variants of an experiment resolve to the same settings, and every
  experiment has at least one run;
- a figure of training experiments (``onenn.plan.kinds.TRAIN_FIGURES``) belongs to a training
  experiment whose variants vary a setting it can group its curves by;
- per-kind checks (``KIND_CHECKS``): a new experiment kind adds an ``if``/``then`` entry to the schema and, if it
  needs any, its checks here.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators

from onenn.base.columns import variant_name
from onenn.base.settings import load_schema, lookup
from onenn.plan import experiments as ex
from onenn.plan.experiments import KeyPath, Variant
from onenn.plan.kinds import TRAIN_FIGURES


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with the config, at a key path such as ``("experiments", "convergence", "sweep", "N", 1)``."""

    path: KeyPath
    message: str

    @property
    def location(self) -> str:
        return format_path(self.path)

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


class ConfigError(ValueError):
    """The config is invalid; ``problems`` lists every problem found."""

    def __init__(self, problems: list[Problem], files: Iterable[str | Path] = ()) -> None:
        self.problems = problems
        names = dict.fromkeys(os.path.relpath(Path(f).resolve()) for f in files)  # once each, in order
        source = f" ({', '.join(names)})" if names else ""
        lines = "\n".join(f"  {p}" for p in problems)
        n = len(problems)
        super().__init__(f"invalid configuration{source}, {n} problem{'s' if n > 1 else ''}:\n{lines}")


def format_path(path: KeyPath) -> str:
    """``("experiments", "x", "sweep", "N", 1) -> "experiments.x.sweep.N[1]"``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def show(value: Any) -> str:
    """A value as the user wrote it in YAML."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value)


# --- the schema layer -------------------------------------------------------------------------------------


def _strict_integer(checker, instance) -> bool:
    """JSON Schema counts 16.0 as an integer; the code does not (a float N breaks tensor shapes)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


StrictValidator = validators.extend(
    Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer)
)

LEAF_KEYWORDS = {
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "pattern",
    "minLength",
    "minItems",
    "minProperties",
}


def applied_schemas(validator, schema: dict, instance: Any) -> Iterator[dict]:
    """``schema`` and every schema applied in place to ``instance`` through ``$ref``, ``allOf`` and a
    matching ``if``/``then``: where the properties an object accepts are declared."""
    yield schema
    if "$ref" in schema:
        yield from applied_schemas(validator, lookup(validator.schema, schema["$ref"]), instance)
    for sub in schema.get("allOf", []):
        yield from applied_schemas(validator, sub, instance)
    if "if" in schema and validator.evolve(schema=schema["if"]).is_valid(instance):
        yield from applied_schemas(validator, schema.get("then", {}), instance)


def declared_properties(validator, schema: dict, instance: Any) -> dict[str, dict]:
    """Every property ``schema`` declares for ``instance`` -> its schema (the first declaration wins)."""
    out: dict[str, dict] = {}
    for sub in applied_schemas(validator, schema, instance):
        for key, prop in sub.get("properties", {}).items():
            out.setdefault(key, prop)
    return out


#: keys that were renamed: an old name is reported with its new one
RENAMED_KEYS = {"n_record": "n_eval"}


def unknown_key(path: KeyPath, key: str, allowed: Iterable[str], what: str = "key") -> Problem:
    allowed = sorted(allowed)
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if RENAMED_KEYS.get(key) in allowed:
        hint = f"; it was renamed to {RENAMED_KEYS[key]!r}"
    else:
        hint = f"; did you mean {close[0]!r}?" if close else ""
    return Problem((*path, key), f"unknown {what} {key!r}{hint} (allowed: {', '.join(allowed)})")


def describe(error: ValidationError) -> str:
    leaf = isinstance(error.schema, dict) and "properties" not in error.schema  # a setting, not a section
    description = error.schema.get("description") if leaf else None
    if error.validator in LEAF_KEYWORDS and description and len(description) <= 80:
        return f"{error.message} ({description})"
    return error.message


def schema_error_problems(validator, error: ValidationError) -> list[Problem]:
    """One ``jsonschema`` error as problems whose path ends at the offending key."""
    path = tuple(error.absolute_path)
    if error.validator in ("additionalProperties", "unevaluatedProperties") and error.validator_value is False:
        allowed = declared_properties(validator, error.schema, error.instance)
        return [unknown_key(path, k, allowed) for k in error.instance if k not in allowed]
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        props = declared_properties(validator, error.schema, error.instance)
        return [
            Problem(
                (*path, k),
                "missing; it is required"
                + (f" ({props[k]['description']})" if "description" in props.get(k, {}) else ""),
            )
            for k in missing
        ]
    if "propertyNames" in error.schema_path:
        allowed = f"must match {error.validator_value}" if error.validator == "pattern" else error.message
        return [Problem((*path, error.instance), f"invalid name {error.instance!r}: {allowed}")]
    return [Problem(path, describe(error))]


def schema_kinds(root: dict) -> list[str]:
    """The experiment kinds the schema allows (``experiments.kinds`` maps a config's experiments to theirs)."""
    return root["$defs"]["experiment"]["properties"]["kind"]["enum"]


def unknown_kind(config: Any, root: dict) -> set[str]:
    """Experiments whose kind is missing or unknown: what they accept is unknown, so only the kind is reported."""
    exps = config.get("experiments") if isinstance(config, dict) else None
    if not isinstance(exps, dict):
        return set()
    return {
        name for name, exp in exps.items() if not isinstance(exp, dict) or exp.get("kind") not in schema_kinds(root)
    }


def schema_problems(config: Any, validator) -> list[Problem]:
    problems, seen = [], set()
    for error in validator.iter_errors(config):
        key = (tuple(error.absolute_path), error.message)
        if key not in seen:  # a $ref and an if/then may both say "not an object"
            seen.add(key)
            problems += schema_error_problems(validator, error)
    skip = unknown_kind(config, validator.schema)
    return [
        p
        for p in problems
        if not (p.path[:1] == ("experiments",) and len(p.path) > 2 and p.path[1] in skip and p.path[2] != "kind")
    ]


# --- what a schema cannot check --------------------------------------------------------------------------


def non_finite(value: Any, path: KeyPath = ()) -> Iterator[Problem]:
    """Every ``.nan``/``.inf`` in the config."""
    if isinstance(value, float) and not math.isfinite(value):
        yield Problem(path, f"{value!r} is not a finite number")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from non_finite(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from non_finite(v, (*path, i))


def experiment_settings(validator, root: dict, experiment: dict) -> dict[str, dict]:
    """The settings an experiment accepts (by its kind) -> their schemas."""
    schema = root["properties"]["experiments"]["additionalProperties"]
    props = declared_properties(validator, schema, experiment)
    return {k: v for k, v in props.items() if k not in ex.EXPERIMENT_KEYS}


def setting_problems(
    validator, path: KeyPath, key: str, value: Any, accepted: dict[str, dict], what: str
) -> list[Problem]:
    """A sweep value or variant entry ``key: value``, checked against the setting's own schema."""
    if key not in accepted:
        return [unknown_key(path, key, accepted, what)]
    if isinstance(value, float) and not math.isfinite(value):
        return []  # reported by non_finite
    check = validator.evolve(schema=accepted[key])
    return [Problem((*path, key), describe(e)) for e in check.iter_errors(value)]


def entry_problems(config: dict, validator, root: dict) -> list[Problem]:
    """Keys and values of every sweep and variant entry."""
    problems: list[Problem] = []
    exps = config.get("experiments")
    for name, exp in exps.items() if isinstance(exps, dict) else ():
        if name in unknown_kind(config, root):
            continue
        accepted = experiment_settings(validator, root, exp)
        base: KeyPath = ("experiments", name)
        sweep = exp.get("sweep")
        if isinstance(sweep, dict):
            for key, values in sweep.items():
                if key not in accepted:
                    problems.append(unknown_key((*base, "sweep"), key, accepted, "setting"))
                elif isinstance(values, list):
                    problems += sweep_list_problems(validator, (*base, "sweep", key), key, values, accepted)
        entries = exp.get("variants")
        if isinstance(entries, list):
            for i, entry in enumerate(entries):
                if isinstance(entry, dict):
                    for key, v in entry.items():
                        if key != "name":
                            problems += setting_problems(validator, (*base, "variants", i), key, v, accepted, "setting")
    return problems


def sweep_list_problems(validator, path: KeyPath, key: str, values: list, accepted: dict[str, dict]) -> list[Problem]:
    """Each value obeys the setting's schema, and no two values give the same folder name (``0.1`` twice, or
    two reals equal to 6 significant digits)."""
    problems = []
    seen: dict[str, int] = {}
    for i, v in enumerate(values):
        problems += [
            Problem((*path, i), p.message) for p in setting_problems(validator, (), key, v, accepted, "setting")
        ]
        name = variant_name({key: v})
        if name in seen:
            problems.append(
                Problem(
                    (*path, i),
                    f"{show(v)} gives the variant name {name!r} of "
                    f"{format_path((*path, seen[name]))}: a duplicate value",
                )
            )
        seen.setdefault(name, i)
    return problems


def origin(name: str, exp: dict, variant: Variant, key: str) -> KeyPath:
    """Where a resolved setting of a variant was written: the variant, its experiment, or ``defaults``."""
    if key in variant.paths:
        return variant.paths[key]
    return ("experiments", name, key) if key in exp else ("defaults", key)


# no comma: Snakemake splits a cluster job's --target-jobs wildcards at commas (see onenn.plan.experiments)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$"


def variant_problems(config: dict, name: str, exp: dict, found: list[Variant]) -> list[Problem]:
    """Distinct, valid folder names; no two variants with the same settings; at least one run."""
    problems = []
    seen_names: dict[str, Variant] = {}
    seen_settings: list[tuple[dict, Variant]] = []
    for v in found:
        if v.name in seen_names:
            first = seen_names[v.name]
            problems.append(
                Problem(
                    v.named_at,
                    f"variant name {v.name!r} is already used by "
                    f"{format_path(first.named_at)}; variant names are folders and must be distinct",
                )
            )
        elif not re.match(NAME_PATTERN, v.name):
            problems.append(Problem(v.named_at, f"variant name {v.name!r} is not a valid folder name ({NAME_PATTERN})"))
        seen_names.setdefault(v.name, v)
        settings = ex.resolved_settings(config, name, v.overrides)
        same = next((w for s, w in seen_settings if s == settings), None)
        if same is not None and same.name != v.name:
            problems.append(
                Problem(
                    v.where,
                    f"duplicate variant: {v.name!r} has the same settings as {same.name!r} ({format_path(same.where)})",
                )
            )
        seen_settings.append((settings, v))
    if not found or all(int(ex.resolved_settings(config, name, v.overrides)["seeds"]) < 1 for v in found):
        problems.append(Problem(("experiments", name), "the experiment has no runs (no variants or no seeds)"))
    return problems


def mixture_weight_unused(config: dict, name: str, exp: dict, found: list[Variant]) -> list[Problem]:
    """A non-zero ``c`` with a loss other than ``mixture`` would be silently ignored."""
    problems = []
    for v in found:
        s = ex.resolved_settings(config, name, v.overrides)
        if s["c"] != 0 and s["loss"] != "mixture":
            problems.append(
                Problem(
                    origin(name, exp, v, "c"),
                    f"c={show(s['c'])} is used only by loss 'mixture', but the loss here is "
                    f"{s['loss']!r} (set by {format_path(origin(name, exp, v, 'loss'))})",
                )
            )
    return problems


def figure_problems(config: dict, name: str, exp: dict) -> list[Problem]:
    """A figure of training experiments needs a training experiment, and variants that differ in a setting it
    can group its curves by (one variant alone is drawn as itself)."""
    figure, path = exp["figure"], ("experiments", name, "figure")
    if figure not in TRAIN_FIGURES:
        return []
    if exp["kind"] != "train":
        return [
            Problem(
                path,
                f"figure {figure!r} draws training experiments (kind 'train'), but experiments.{name} has kind "
                f"{exp['kind']!r}",
            )
        ]
    found = ex.variants(config, name)
    if len(found) > 1 and not ex.group_by(config, name):
        return [
            Problem(
                path,
                f"figure {figure!r} groups its curves by the settings the variants vary, but the {len(found)} "
                f"variants of experiments.{name} vary none it can group by (only {', '.join(ex.NOT_GROUPED)}); "
                "sweep or vary a setting, or merge the variants",
            )
        ]
    return []


Check = Callable[[dict, str, dict, list[Variant]], list[Problem]]

#: checks of the resolved runs, by experiment kind (``variant_problems`` applies to every kind)
KIND_CHECKS: dict[str, tuple[Check, ...]] = {
    "train": (mixture_weight_unused,),
}


def run_problems(config: dict) -> list[Problem]:
    problems = []
    for name, exp in config["experiments"].items():
        found = ex.declared_variants(config, name)
        own = variant_problems(config, name, exp, found)
        problems += own or figure_problems(config, name, exp)  # the grouping needs distinct variants
        for check in KIND_CHECKS.get(exp["kind"], ()):
            problems += check(config, name, exp, found)
    return problems


# --- entry points -----------------------------------------------------------------------------------------


def check_config(config: Any, schema: dict) -> list[Problem]:
    """Every problem of ``config`` (empty when it is valid), sorted by key path."""
    validator = StrictValidator(schema)
    infinite = list(non_finite(config))
    bad_paths = {p.path for p in infinite}
    problems = infinite + [p for p in schema_problems(config, validator) if p.path not in bad_paths]
    if isinstance(config, dict):
        problems += entry_problems(config, validator, schema)
        if not problems:  # the runs can be resolved only from a config whose parts are valid
            problems += run_problems(config)
    return sorted(set(problems), key=lambda p: (format_path(p.path), p.message))


def validate_config(config: Any, schema_path: str | Path, files: Iterable[str | Path] = ()) -> None:
    """Raise ``ConfigError`` listing every problem of ``config`` (read from ``files``); return quietly when it
    is valid."""
    problems = check_config(config, load_schema(schema_path))
    if problems:
        raise ConfigError(problems, files)
