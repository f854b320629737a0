"""The shipped configurations as Snakemake reads them, for the tests."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
#: the --configfile's of a full run and of a quick run
FULL = ("config.yaml",)
QUICK = ("config.yaml", "workflow/presets/quick.yaml")


def merge(base: dict, update: dict) -> dict:
    """``update`` layered over ``base`` as Snakemake layers a second --configfile: nested mappings merge, anything
    else (lists too) is replaced."""
    out = dict(base)
    for key, value in update.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def load_config(*paths: str) -> dict:
    """The configuration of ``--configfile PATHS...`` (relative to the repository)."""
    config: dict = {}
    for path in paths:
        config = merge(config, yaml.safe_load((ROOT / path).read_text()))
    return config
