"""Each setting stated once, in ``workflow/schemas/config.schema.yaml``: a kind's job keys (``job_keys``) and the
settings dataclasses' defaults (``Settings``' ``schema``) come from there (docs/guide.md#configuration)."""

import functools
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, ClassVar, Self

import yaml

#: the configuration's schema: in the repository a link to the workflow's (one file); in a wheel, its copy
SCHEMA_PATH = Path(__file__).with_name("config.schema.yaml")
#: settings that say how many runs a variant has, not what a run does: no job's, never a grouping of the curves
PLAN_KEYS = ("seeds",)


def load_schema(path: str | Path = SCHEMA_PATH) -> dict:
    """The schema at ``path``; ``defaults`` is made to require every setting it declares."""
    root = yaml.safe_load(Path(path).read_text())
    defaults = root.get("properties", {}).get("defaults")
    if defaults is not None and "required" not in defaults:
        defaults["required"] = [key for sub in defaults.get("allOf", ()) for key in section(sub["$ref"], root)]
    return root


@functools.cache
def schema() -> dict:
    if not SCHEMA_PATH.is_file():
        raise FileNotFoundError(f"{SCHEMA_PATH} is missing: onenn reads its settings there (a link in a checkout)")
    return load_schema()


def lookup(root: dict, ref: str) -> dict:
    """The schema at a local ``$ref`` such as ``#/$defs/train``."""
    if not ref.startswith("#/"):
        raise ValueError(f"only local references are supported in the config schema; got {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def section(name: str, root: dict | None = None) -> dict[str, dict]:
    """The settings ``$defs/<name>`` (or a ``$ref``) declares, in order, each ``$ref`` resolved (its siblings win)."""
    root = schema() if root is None else root
    props = lookup(root, name if name.startswith("#/") else f"#/$defs/{name}").get("properties", {})
    return {k: {**lookup(root, p["$ref"]), **p} if "$ref" in p else p for k, p in props.items()}


#: the devices a training run may name (``auto``: CUDA where torch sees a GPU, else the CPU)
DEVICES = tuple(section("train")["device"]["enum"])


def job_keys(name: str) -> tuple[str, ...]:
    """The settings the job of kind ``name`` (or the ``evaluation``) depends on, in the schema's order."""
    return tuple(k for k in section(name) if k not in PLAN_KEYS and k != "panels")


class Settings:
    """Mixin for a frozen dataclass: ``from_dict`` rejects unknown keys by name, ``to_dict`` is ``asdict``."""

    #: what the settings are, for the error message ("unknown <WHAT> [...]")
    WHAT: ClassVar[str] = "settings"

    def __init_subclass__(cls, schema: str = "", **options: Any) -> None:
        """``class X(Settings, schema="audit")``: each field without a value gets its default in ``$defs/audit``."""
        super().__init_subclass__(**options)
        for key, prop in section(schema).items() if schema else ():
            if key in cls.__annotations__ and key not in vars(cls) and "default" in prop:
                default = prop["default"]
                setattr(cls, key, tuple(default) if isinstance(default, list) else default)

    @classmethod
    def from_dict(cls, values: dict) -> Self:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown {cls.WHAT} {unknown}; allowed: {sorted(known)}")
        return cls(**values)

    def to_dict(self) -> dict:
        return asdict(self)
