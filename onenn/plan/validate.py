"""Check the workflow's config before any job runs, every problem named by its key path (docs/guide.md): the schema,
then what it cannot say (finite numbers, strict integers, sweep and variant entries, distinct variants). No torch."""

import difflib
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators

from onenn.base.columns import variant_name
from onenn.base.settings import PLAN_KEYS, load_schema, lookup, schema, section
from onenn.maths.nodes import audit_problems
from onenn.maths.prompts import MAX_ROUNDS, largest_delta
from onenn.plan import experiments as ex
from onenn.plan import kinds
from onenn.plan.experiments import KeyPath, Variant

#: the schema's rules for the folder names of variants (no comma: cluster jobs get their wildcards as
#: comma-separated pairs) and of experiments
NAME_RULES = {"variant": schema()["$defs"]["variants"]["items"]["properties"]["name"]}
NAME_RULES["experiment"] = schema()["properties"]["experiments"]["propertyNames"]
#: keys that were renamed: an old name is reported with its new one
RENAMED_KEYS = {"n_record": "n_eval"}
#: the keywords of a setting's own schema, whose errors quote its description
LEAF_KEYWORDS = {"type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern"}
LEAF_KEYWORDS |= {"minLength", "minItems", "minProperties"}
#: the values a config may hold once its YAML aliases are expanded (the shipped one: a few hundred)
MAX_VALUES = 100_000
#: the most work a run may do, as a multiple of a run of its kind at its defaults (config.yaml's max_work)
MAX_WORK = schema()["properties"]["max_work"]["default"]
#: the arrays of a run that grow the most, by the setting that sizes each (onenn.training.train and .cpu, the sets)
ARRAYS = {"d": "the saved weights", "steps": "every step's loss", "epochs": "every step's loss"}
ARRAYS |= {"batch": "a block of 16 minibatches", "test_size": "a test set", "train_size": "the training set"}


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
        super().__init__(f"invalid {what}{source}, {len(problems)} problem{'s' if len(problems) > 1 else ''}:\n{lines}")


def format_path(path: KeyPath) -> str:
    """``("experiments", "x", "sweep", "N", 1) -> "experiments.x.sweep.N[1]"``."""
    out = ""
    for part in path:
        name = part if str(part).isprintable() else repr(part)  # a key with a newline: 'a\n'
        out += f"[{part}]" if isinstance(part, int) else (f".{name}" if out else str(name))
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
        out = {**declared_properties(validator, sub, instance), **out}
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


def expanded_size(value: Any, memo: dict[int, float]) -> float:
    """The values in ``value`` once YAML's aliases (shared objects) are expanded, in time linear in the distinct
    objects (``inf``: one that contains itself)."""
    if isinstance(value, dict | list) and id(value) not in memo:
        memo[id(value)], parts = math.inf, value.values() if isinstance(value, dict) else value
        memo[id(value)] = 1 + sum(expanded_size(v, memo) for v in parts)
    return memo.get(id(value), 1)


def too_large(config: Any) -> list[Problem]:
    """The innermost, largest part of the config over ``MAX_VALUES`` values once its aliases are expanded."""
    path, node, memo, seen = (), config, {}, set()
    if expanded_size(config, memo) <= MAX_VALUES:
        return []
    while isinstance(node, dict) and id(node) not in seen:  # into the largest part
        seen.add(id(node))
        key, part = max(node.items(), key=lambda kv: expanded_size(kv[1], memo), default=(None, None))
        if expanded_size(part, memo) <= MAX_VALUES:
            break
        path, node = (*path, key), part
    what = "contains itself" if memo[id(node)] == math.inf else f"holds {memo[id(node)]:.0f} values"
    message = f"{what} once its YAML aliases (*name) are expanded; a configuration may hold at most {MAX_VALUES}"
    return [Problem(path, message)]


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
    return variant.paths.get(key, ("experiments", name, key) if key in exp else ("defaults", key))


def name_problems(at: KeyPath, name: Any, what: str) -> list[Problem]:
    """``name`` as the folder name of a ``what`` (``variant``, ``experiment``): none, or the problem."""
    rule = NAME_RULES[what]
    if Draft202012Validator(rule).is_valid(name):
        return []
    but = f", and not {' or '.join(rule['not']['enum'])}" if "not" in rule else ""
    return [Problem(at, f"{what} name {name!r} is not a valid folder name ({rule['pattern']}{but})")]


def variant_problems(found: list[Variant], resolved: list[dict], name: str) -> list[Problem]:
    """Distinct, valid folder names; no two variants with the same settings (``resolved``); at least one run."""
    problems = []
    for i, (v, settings) in enumerate(zip(found, resolved, strict=True)):
        named = next((w for w in found[:i] if w.name == v.name), None)  # the first of this name
        if named is not None:
            message = f"variant name {v.name!r} is already used by {format_path(named.named_at)}"
            problems.append(Problem(v.named_at, message + "; variant names are folders and must be distinct"))
        else:
            problems += name_problems(v.named_at, v.name, "variant")
        same = next((w for w, s in zip(found[:i], resolved) if s == settings), None)  # the first of these settings
        if same is not None and same.name != v.name:
            message = f"duplicate variant: {v.name!r} has the same settings as {same.name!r}"
            problems.append(Problem(v.where, f"{message} ({format_path(same.where)})"))
    if not found or all(int(s["seeds"]) < 1 for s in resolved):
        problems.append(Problem(("experiments", name), "the experiment has no runs (no variants or no seeds)"))
    return problems


def figure_problems(config: dict, name: str, exp: dict) -> list[Problem]:
    """A figure of the experiment's kind; one of training experiments, variants that differ in a setting it groups by."""
    figure, path = exp["figure"], ("experiments", name, "figure")
    mine = kinds.KINDS[exp["kind"]].figures if exp["kind"] in kinds.KINDS else (exp["kind"],)  # a new kind: its own
    if figure not in mine:
        drawn = next((k.name for k in kinds.KINDS.values() if figure in k.figures), figure)
        message = f"figure {figure!r} draws experiments of kind {drawn!r}, but experiments.{name} has kind "
        return [Problem(path, message + f"{exp['kind']!r} (its figures: {', '.join(mine)})")]
    found = ex.variants(config, name)
    if figure not in kinds.TRAIN_FIGURES or len(found) < 2 or ex.group_by(config, name):
        return []
    message = f"figure {figure!r} groups its curves by the settings the variants vary, but the {len(found)} "
    message += f"variants of experiments.{name} vary none it can group by (only {', '.join(PLAN_KEYS)}); "
    return [Problem(path, message + "sweep or vary a setting, or merge the variants")]


def palette_problems(config: dict) -> list[Problem]:
    """The palette as the figures take it: seaborn's ``color_palette``, and a colormap for figure ``landscape``."""
    import matplotlib  # here, not for every plan; seaborn (slower) only for a name that is not a colormap

    palette, path = config["plots"].get("palette", "viridis"), ("plots", "palette")
    if palette in matplotlib.colormaps and palette.lower() != "jet":  # seaborn refuses jet
        return []
    import seaborn

    try:
        seaborn.color_palette(palette, 1)
    except ValueError:
        close = difflib.get_close_matches(palette, [c for c in matplotlib.colormaps if c != palette], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        allowed = "a seaborn palette such as 'deep' or a matplotlib colormap such as 'viridis'"
        return [Problem(path, f"unknown palette {palette!r}{hint} (allowed: {allowed})")]
    landscape = [f"experiments.{n}.figure" for n, e in config["experiments"].items() if e["figure"] == "landscape"]
    message = f"{palette!r} is a seaborn palette, not a matplotlib colormap, which figure 'landscape' draws with"
    return [Problem(path, f"{message} ({landscape[0]}); use a colormap such as 'viridis'")] if landscape else []


def run_limits(kind: str, s: dict, root: dict) -> Iterator[tuple[str, float, str]]:
    """``(setting, how bad, message)`` where a run of settings ``s`` cannot run: the first array (``ARRAYS``) over this
    machine's memory, a margin the separated sampler does not reach, an audit's node counts and times."""
    if kind not in ("train", "binary", "audit"):
        return
    s = {**{k: p["default"] for k, p in section(kind, root).items() if "default" in p}, **s}
    if kind == "audit":
        yield from ((key, 0, message) for key, message in audit_problems(s))
        return
    size, D, T = (4 if s["dtype"] == "float32" else 8), s["d"] + (s["K"] if kind == "train" else 1) + 1, s["N"] + 1
    steps = s["steps"] if kind == "train" else s["epochs"] * -(-s["train_size"] // s["batch"])
    arrays = {"d": s["n_eval"] * D * D * 8, "steps" if kind == "train" else "epochs": steps * 8}  # in float64
    arrays |= {"batch": 16 * D * T * s["batch"] * size, "test_size": s["test_size"] * T * s["d"] * 8}
    arrays |= {"train_size": s["train_size"] * T * s["d"] * 8} if kind == "binary" else {}
    limit = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for key, n in [(k, n) for k, n in arrays.items() if n > limit][:1]:
        memory = f"more than this machine's memory ({limit / 2**30:.3g} GiB)"
        yield key, n, f"{show(s[key])} gives a run an array of {n / 2**30:.3g} GiB ({ARRAYS[key]}), {memory}"
    bound = largest_delta(s["d"], s["test_size"] * s["N"]) if s["delta"] > 2 else 4  # to 2 (a right angle): p >= 1/2
    if s["delta"] > bound:
        at, most = f"d={s['d']}, N={s['N']}, test_size={s['test_size']}", math.floor(bound * 1e3) / 1e3
        message = f"{show(s['delta'])} is more than the separated sampler reaches at {at}: at most {most} "
        yield "delta", -bound, message + f"(each context point gets {MAX_ROUNDS} draws; docs/method.md §3.2)"


def work_limit(kind: str, s: dict, root: dict, most: float) -> Iterator[tuple[str, float, str]]:
    """``(setting, how bad, message)`` where a run does over ``most`` times the work of one at its kind's defaults (a
    typo: ``steps: 1e9``), at the setting most enlarged; how bad is below 0: a memory limit at one key comes first."""
    defaults = {k: p["default"] for k, p in section(kind, root).items() if "default" in p}
    if kind == "scaling":  # one point at one K
        prompts = root["$defs"]["scaling"]["properties"]["panels"]["additionalProperties"]["properties"]["prompts"]
        defaults["panels"] = {"one": {"xi": [None], "K": [None], "prompts": prompts["default"]}}
    factors, base = kinds.work(kind, s), kinds.work(kind, {**s, **defaults})
    ratio = math.prod(factors.values()) / math.prod(base.values())
    if ratio > most:
        key = max(factors, key=lambda k: factors[k] / base[k])
        size = "its points × K × prompts" if key == "panels" else show(s[key])
        message = f"{size} makes a run {ratio:.3g} times the work of one of kind {kind} at its defaults"
        message += f" ({kinds.WORK[kind]}); max_work (a top-level key) is {show(most)}: raise it for a larger run"
        yield key, -1.0 / ratio, message


def check_config(config: Any, schema: dict) -> list[Problem]:
    """Every problem of ``config`` (empty when it is valid), sorted by key path."""
    if aliased := too_large(config):  # before any walk of the expanded tree
        return aliased
    validator = StrictValidator(schema)
    infinite = list(non_finite(config))
    errors: dict[tuple, ValidationError] = {}  # the first of each: a $ref and an if/then may both say "not an object"
    for error in validator.iter_errors(config):
        errors.setdefault((tuple(error.absolute_path), error.message), error)
    problems = [p for error in errors.values() for p in schema_error_problems(validator, error)]
    bad_paths = {p.path for p in infinite}
    # of an experiment whose kind is unknown, only the kind (and the experiment itself) is reported
    skip = {("experiments", name) for name in unknown_kind(config, schema)}
    problems = infinite + [
        p for p in problems if p.path not in bad_paths and (p.path[:2] not in skip or p.path[2:3] in ((), ("kind",)))
    ]
    if isinstance(config, dict):
        problems += entry_problems(config, validator, schema)
    if not problems:  # the runs can be resolved only from a config whose parts are valid
        worst: dict[KeyPath, tuple[float, str]] = {}  # of the variants' limits, the worst at each key path
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
                most = config.get("max_work", MAX_WORK)
                heavy = work_limit(exp["kind"], {**s, "panels": exp.get("panels")}, schema, most)
                for key, bad, message in [*run_limits(exp["kind"], s, schema), *heavy]:
                    if bad > worst.get(at := origin(name, exp, v, key), (-math.inf,))[0]:
                        worst[at] = (bad, message)
        problems += [Problem(at, message) for at, (_, message) in worst.items()] + palette_problems(config)
    return sorted(set(problems), key=lambda p: (format_path(p.path), p.message))


def validate_config(config: Any, schema_path: str | Path | None = None, files: Iterable[str | Path] = ()) -> None:
    """Raise ``ConfigError`` listing every problem of ``config`` (read from ``files``; by default onenn's schema)."""
    problems = check_config(config, schema() if schema_path is None else load_schema(schema_path))
    if problems:
        raise ConfigError(problems, files)
