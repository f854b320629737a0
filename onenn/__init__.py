"""onenn: a one-layer softmax-attention transformer learning the multiclass 1-NN rule in context (docs/guide.md).
``onenn.api``'s functions are re-exported here lazily (``onenn.train``, ...): ``import onenn`` imports nothing heavy."""

import importlib

__version__ = "0.4.0"  # the same in pyproject.toml, CITATION.cff and CHANGELOG.md (tests/repo/test_version.py)

#: the names of ``onenn.api`` that ``onenn`` re-exports, imported on first use
API = ("train", "evaluate", "load", "family_weights", "reduced_loss", "population_flow", "default_settings")


def __getattr__(name: str):
    if name in API:
        # by name, not an import statement: every job imports this package and its code fingerprint follows
        # import statements (onenn.base.provenance); one here would make every job depend on the API
        return getattr(importlib.import_module("onenn.api"), name)
    raise AttributeError(f"module 'onenn' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
