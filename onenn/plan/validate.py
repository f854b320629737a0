"""Check the workflow's config before any job runs, every problem named by its key path (docs/guide.md): the schema,
then what it cannot say (finite numbers, strict integers, sweep and variant entries, distinct variants). No torch."""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators

from onenn.base.columns import variant_name
from onenn.base.settings import PLAN_KEYS, load_schema, lookup, schema
from onenn.plan import experiments as ex
from onenn.plan.experiments import KeyPath, Variant
from onenn.plan.kinds import TRAIN_FIGURES

#: a variant's folder name (no comma: cluster jobs get their wildcards as comma-separated pairs)
NAME_PATTERN = schema()["$defs"]["variants"]["items"]["properties"]["name"]["pattern"]
#: keys that were renamed: an old name is reported with its new one
RENAMED_KEYS = {"n_record": "n_eval"}
#: the keywords of a setting's own schema, whose errors quote its description
LEAF_KEYWORDS = {"type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern"}
LEAF_KEYWORDS |= {"minLength", "minItems", "minProperties"}


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong, at a key path such as ``("experiments", "convergence", "sweep", "N", 1)``."""

    path: KeyPath
    message: str

    @property
    def location(self) -> str:
        return format_path(self.path)

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


class ConfigError(ValueError):
    """The config (or the claims file: ``what``) is invalid; ``problems`` lists every problem found."""

    def __init__(self, problems: list[Problem], files: Iterable[str | Path] = (), what: str = "configuration") -> None:
        self.problems = problems
        names = dict.fromkeys(os.path.relpath(Path(f).resolve()) for f in files)  # once each, in order
        source = f" ({', '.join(names)})" if names else ""
        lines = "\n".join(f"  {p}" for p in problems)
        n = len(problems)
        super().__init__(f"invalid {what}{source}, {n} problem{'s' if n > 1 else ''}:\n{lines}")


def format_path(path: KeyPath) -> str:
    """``("experiments", "x", "sweep", "N", 1) -> "experiments.x.sweep.N[1]"``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def show(value: Any) -> str:
    """A value as the user wrote it in YAML."""
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else repr(value)


def unknown(path: KeyPath, what: str, name: Any, allowed: Iterable[Any], known: str = "allowed") -> Problem:
    """``unknown setting 'stepz'; did you mean 'steps'? (allowed: ...)``, or the new name of a renamed key."""
    names = [str(a) for a in allowed]
    close = difflib.get_close_matches(str(name), names, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    if isinstance(name, str) and RENAMED_KEYS.get(name) in names:
        hint = f"; it was renamed to {RENAMED_KEYS[name]!r}"
    return Problem(path, f"unknown {what} {name!r}{hint} ({known}: {', '.join(names) or 'none'})")


#: JSON Schema counts 16.0 as an integer; the code does not (a float N breaks tensor shapes)
STRICT_INTEGERS = Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda checker, instance: isinstance(instance, int) and not isinstance(instance, bool)
)
StrictValidator = validators.extend(Draft202012Validator, type_checker=STRICT_INTEGERS)


def declared_properties(validator, schema: dict, instance: Any) -> dict[str, dict]:
    """Every property ``schema`` and the schemas it applies in place to ``instance`` (``$ref``, ``allOf``, a matching
    ``if``) declare -> its schema (the first declaration wins)."""
    out = dict(schema.get("properties", {}))
    applied = [lookup(validator.schema, schema["$ref"])] if "$ref" in schema else []
    applied += schema.get("allOf", [])
    if "if" in schema and validator.evolve(schema=schema["if"]).is_valid(instance):
        applied.append(schema.get("then", {}))
    for sub in applied:
        for key, prop in declared_properties(validator, sub, instance).items():
            out.setdefault(key, prop)
    return out


def describe(error: ValidationError) -> str:
    """The error's message, with the setting's description where it is short."""
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
        return [unknown((*path, k), "key", k, sorted(allowed)) for k in error.instance if k not in allowed]
    if error.validator == "required":
        props = declared_properties(validator, error.schema, error.instance)
        described = {k: f" ({props[k]['description']})" if "description" in props.get(k, {}) else "" for k in props}
        missing = [k for k in error.validator_value if k not in error.instance]
        return [Problem((*path, k), "missing; it is required" + described.get(k, "")) for k in missing]
    if "propertyNames" in error.schema_path:
        allowed = f"must match {error.validator_value}" if error.validator == "pattern" else error.message
        return [Problem((*path, error.instance), f"invalid name {error.instance!r}: {allowed}")]
    return [Problem(path, describe(error))]


def unknown_kind(config: Any, root: dict) -> set[str]:
    """Experiments whose kind is missing or unknown: what they accept is unknown, so only the kind is reported."""
    exps = config.get("experiments") if isinstance(config, dict) else None
    kinds = root["$defs"]["experiment"]["properties"]["kind"]["enum"]
    found = exps.items() if isinstance(exps, dict) else ()
    return {name for name, exp in found if not isinstance(exp, dict) or exp.get("kind") not in kinds}


def non_finite(value: Any, path: KeyPath = ()) -> Iterator[Problem]:
    """Every ``.nan``/``.inf`` in the config."""
    if isinstance(value, float) and not math.isfinite(value):
        yield Problem(path, f"{value!r} is not a finite number")
    elif isinstance(value, dict | list):
        for k, v in value.items() if isinstance(value, dict) else enumerate(value):
            yield from non_finite(v, (*path, k))


def setting_problems(validator, at: KeyPath, key: str, value: Any, accepted: dict[str, dict]) -> list[Problem]:
    """A sweep value or variant entry ``key: value`` at ``at``, checked against the setting's own schema."""
    if key not in accepted:
        return [unknown(at, "setting", key, sorted(accepted))]
    if isinstance(value, float) and not math.isfinite(value):
        return []  # reported by non_finite
    return [Problem(at, describe(e)) for e in validator.evolve(schema=accepted[key]).iter_errors(value)]


def entry_problems(config: dict, validator, root: dict) -> list[Problem]:
    """Keys and values of every sweep and variant entry; no two values of a sweep give one folder name (``0.1`` twice)."""
    problems: list[Problem] = []
    exps, skip = config.get("experiments"), unknown_kind(config, root)
    experiment = root["properties"]["experiments"]["additionalProperties"]
    for name, exp in exps.items() if isinstance(exps, dict) else ():
        if name in skip:
            continue
        props = declared_properties(validator, experiment, exp)
        accepted = {k: v for k, v in props.items() if k not in ex.EXPERIMENT_KEYS}
        base: KeyPath = ("experiments", name)
        sweep = exp.get("sweep")
        for key, values in sweep.items() if isinstance(sweep, dict) else ():
            at, seen = (*base, "sweep", key), {}
            if key not in accepted:
                problems.append(unknown(at, "setting", key, sorted(accepted)))
            for i, v in enumerate(values) if key in accepted and isinstance(values, list) else ():
                problems += setting_problems(validator, (*at, i), key, v, accepted)
                variant = variant_name({key: v})
                if variant in seen:
                    message = f"{show(v)} gives the variant name {variant!r} of {format_path((*at, seen[variant]))}"
                    problems.append(Problem((*at, i), message + ": a duplicate value"))
                seen.setdefault(variant, i)
        entries = exp.get("variants")
        for i, entry in enumerate(entries) if isinstance(entries, list) else ():
            for key, v in entry.items() if isinstance(entry, dict) else ():
                if key != "name":
                    problems += setting_problems(validator, (*base, "variants", i, key), key, v, accepted)
    return problems


def origin(name: str, exp: dict, variant: Variant, key: str) -> KeyPath:
    """Where a resolved setting of a variant was written: the variant, its experiment, or ``defaults``."""
    if key in variant.paths:
        return variant.paths[key]
    return ("experiments", name, key) if key in exp else ("defaults", key)


def variant_problems(found: list[Variant], resolved: list[dict], name: str) -> list[Problem]:
    """Distinct, valid folder names; no two variants with the same settings (``resolved``); at least one run."""
    problems = []
    for i, (v, settings) in enumerate(zip(found, resolved, strict=True)):
        named = next((w for w in found[:i] if w.name == v.name), None)  # the first of this name
        if named is not None:
            message = f"variant name {v.name!r} is already used by {format_path(named.named_at)}"
            problems.append(Problem(v.named_at, message + "; variant names are folders and must be distinct"))
        elif not re.match(NAME_PATTERN, v.name):
            problems.append(Problem(v.named_at, f"variant name {v.name!r} is not a valid folder name ({NAME_PATTERN})"))
        same = next((w for w, s in zip(found[:i], resolved) if s == settings), None)  # the first of these settings
        if same is not None and same.name != v.name:
            message = f"duplicate variant: {v.name!r} has the same settings as {same.name!r}"
            problems.append(Problem(v.where, f"{message} ({format_path(same.where)})"))
    if not found or all(int(s["seeds"]) < 1 for s in resolved):
        problems.append(Problem(("experiments", name), "the experiment has no runs (no variants or no seeds)"))
    return problems


def figure_problems(config: dict, name: str, exp: dict) -> list[Problem]:
    """A figure of training experiments needs a training experiment whose variants differ in a setting it groups by."""
    figure, path = exp["figure"], ("experiments", name, "figure")
    if figure not in TRAIN_FIGURES:
        return []
    if exp["kind"] != "train":
        message = f"figure {figure!r} draws training experiments (kind 'train'), but experiments.{name} has kind "
        return [Problem(path, message + f"{exp['kind']!r}")]
    found = ex.variants(config, name)
    if len(found) < 2 or ex.group_by(config, name):
        return []
    message = f"figure {figure!r} groups its curves by the settings the variants vary, but the {len(found)} "
    message += f"variants of experiments.{name} vary none it can group by (only {', '.join(PLAN_KEYS)}); "
    return [Problem(path, message + "sweep or vary a setting, or merge the variants")]


def check_config(config: Any, schema: dict) -> list[Problem]:
    """Every problem of ``config`` (empty when it is valid), sorted by key path."""
    validator = StrictValidator(schema)
    infinite = list(non_finite(config))
    problems, seen = [], set()
    for error in validator.iter_errors(config):
        key = (tuple(error.absolute_path), error.message)
        if key not in seen:  # a $ref and an if/then may both say "not an object"
            seen.add(key)
            problems += schema_error_problems(validator, error)
    bad_paths = {p.path for p in infinite}
    # of an experiment whose kind is unknown, only the kind (and the experiment itself) is reported
    skip = {("experiments", name) for name in unknown_kind(config, schema)}
    problems = infinite + [
        p for p in problems if p.path not in bad_paths and (p.path[:2] not in skip or p.path[2:3] in ((), ("kind",)))
    ]
    if isinstance(config, dict):
        problems += entry_problems(config, validator, schema)
    if not problems:  # the runs can be resolved only from a config whose parts are valid
        for name, exp in config["experiments"].items():
            found = ex.declared_variants(config, name)
            resolved = [ex.resolved_settings(config, name, v.overrides) for v in found]
            # the figure's grouping needs distinct variants
            problems += variant_problems(found, resolved, name) or figure_problems(config, name, exp)
            for v, s in zip(found, resolved, strict=True):  # a non-zero c with another loss would be ignored
                if exp["kind"] == "train" and s["c"] != 0 and s["loss"] != "mixture":
                    message = f"c={show(s['c'])} is used only by loss 'mixture', but the loss here is {s['loss']!r}"
                    loss_at = format_path(origin(name, exp, v, "loss"))
                    problems.append(Problem(origin(name, exp, v, "c"), f"{message} (set by {loss_at})"))
    return sorted(set(problems), key=lambda p: (format_path(p.path), p.message))


def validate_config(config: Any, schema_path: str | Path, files: Iterable[str | Path] = ()) -> None:
    """Raise ``ConfigError`` listing every problem of ``config`` (read from ``files``)."""
    problems = check_config(config, load_schema(schema_path))
    if problems:
        raise ConfigError(problems, files)
