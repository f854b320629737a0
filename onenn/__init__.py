"""onenn: a one-layer softmax-attention transformer learning the multiclass 1-NN rule in context.

The package is layered (docs/architecture.md):

- the mathematics, at the top: ``model``, ``gradient``, ``losses`` (torch), ``family``, ``init``; every prompt
  sampler and the 1-NN index in ``prompts`` (numpy), multiclass and binary; the recorded steps in ``steps``;
- ``onenn.pipeline``: experiments and variants, config validation, resources, settings, io, logs and
  ``jobs``, the job functions that ``workflow/scripts/`` call; it never imports torch, and the Snakefile
  imports only it;
- ``onenn.training``: the SGD engine, the trainer, the autograd baseline, the benchmark, binary SGD;
- ``onenn.analysis``: evaluation, tables, the headline table, figures and the report;
- ``onenn.theory``: the reduced dynamics on the two-parameter family (``onenn.theory.reduced``), the scaling
  identity, the audit, the loss landscape and full-matrix gradient descent (numpy and scipy, no torch).
"""
