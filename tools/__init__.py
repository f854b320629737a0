"""Developer tools, outside the product, run from the repository's root (``python -m tools.X --help``):
``bench`` (the engine), ``bench_run`` (a whole run), ``compare tables|claims`` (two runs), ``docs numbers|columns``
(the generated docs), ``fused_probe`` and ``gpu_check`` (the fused CUDA engine). Repeat tests with
``pytest --count k`` (pytest-repeat); time the suite with ``pytest --durations=25``.
"""
