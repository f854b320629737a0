"""Developer tools, outside the product, run from the repository's root (``python -m tools.X --help``): ``bench``
(the CPU engine), ``bench_run`` (a whole run), ``compare tables|claims`` (two runs), ``docs numbers|columns`` (the
generated docs), ``bench_audit`` (the audit). The GPU check is tests/gpu/check.sh. Repeat
tests with ``pytest --count k`` (pytest-repeat); time the suite with ``pytest --durations=25``.
"""
