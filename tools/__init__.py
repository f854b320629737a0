"""Developer tools, run from the repository's root: ``python -m tools.bench|compare|docs --help`` (benchmarks, two
runs compared, the generated docs). The GPU check is tests/gpu/check.sh; ``pytest --count k`` repeats tests."""
