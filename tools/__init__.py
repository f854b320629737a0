"""Developer tools, run from the repository's root (``python -m tools.X --help``): ``bench engine|audit|run`` (the
CPU engine, the audit's hot spots, a whole run), ``compare tables|claims`` (two runs), ``docs numbers|columns`` (the
generated docs). The GPU check is tests/gpu/check.sh; ``pytest --count k`` repeats tests."""
