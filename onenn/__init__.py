"""onenn: a one-layer softmax-attention transformer learning the multiclass 1-NN rule in context.

The package is layered, and its imports point one way (docs/architecture.md; ``tests/repo/test_layers.py``):

- at the bottom, side by side: the mathematics, ``onenn.maths`` (``model``, ``losses``, ``family``, ``init``,
  ``prompts``, ``steps``), and the foundation ``onenn.base`` (settings, atomic writes and checked reads,
  where every output lives, provenance, column names);
- above them, side by side: ``onenn.training`` (SGD engines, numba and Triton), ``onenn.theory`` (the reduced
  dynamics and the experiments beyond the paper, numpy and scipy), ``onenn.analysis`` (evaluation, tables,
  statistics, figures) and ``onenn.plan`` (what the Snakefile imports: experiments, validation, resources);
- above them: ``onenn.jobs``, one module per stage, the only code that reads and writes the workflow's files;
- on the roof: ``onenn.api``, onenn from Python without Snakemake (docs/api.md). Its functions are re-exported
  here lazily (``onenn.train``, ``onenn.evaluate``, ...), so that ``import onenn`` itself imports nothing heavy.
"""

import importlib

__version__ = "0.4.0"  # the same in pyproject.toml, CITATION.cff and CHANGELOG.md (tests/repo/test_version.py)

#: the names of ``onenn.api`` that ``onenn`` re-exports, imported on first use
API = ("train", "evaluate", "load", "family_weights", "reduced_loss", "population_flow", "default_settings")


def __getattr__(name: str):
    if name in API:
        # by name, not by an import statement: every job imports this package, and a job's code fingerprint
        # (onenn.base.fingerprint) follows import statements, so one here would make every job depend on the API
        # and all it imports, which no job runs
        return getattr(importlib.import_module("onenn.api"), name)
    raise AttributeError(f"module 'onenn' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
