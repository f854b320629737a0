"""The plan: what the Snakefile imports to turn the configuration into jobs (docs/guide.md). It imports the
foundation (``onenn.base``) only: never torch, pandas or the layers that compute (``tests/repo/test_layers.py``)."""
