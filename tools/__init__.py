"""Developer tools, run from the repository's root (``python -m tools.X --help``): ``bench`` (the CPU engine),
``bench_run`` (a whole run), ``compare tables|claims`` (two runs), ``docs numbers|columns`` (the generated docs),
``bench_audit`` (the audit). The GPU check is tests/gpu/check.sh; ``pytest --count k`` repeats tests."""
