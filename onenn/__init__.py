"""onenn: a one-layer softmax-attention transformer learning the multiclass 1-NN rule in context.

The package is layered, and its imports point one way (docs/architecture.md; ``tests/repo/test_layers.py``):

- at the bottom, side by side: the mathematics, at the top of the package (``model``, its numpy twin
  ``model_numpy``, ``gradient``, ``losses``, ``family``, ``init``, ``prompts``, ``steps``), and the foundation ``onenn.base`` (settings, atomic writes and
  checked reads, where every output lives, provenance, column names);
- above them, side by side: ``onenn.training`` (SGD engines, torch and numba), ``onenn.theory`` (the reduced
  dynamics and the experiments beyond the paper, numpy and scipy), ``onenn.analysis`` (evaluation, tables,
  statistics, figures) and ``onenn.plan`` (what the Snakefile imports: experiments, validation, resources);
- on the roof: ``onenn.jobs``, one module per stage, the only code that reads and writes the workflow's files.
"""

__version__ = "0.4.0"  # the same in pyproject.toml, CITATION.cff and CHANGELOG.md (tests/test_version.py)
