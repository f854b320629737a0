"""The plan: what the Snakefile imports to turn the configuration into jobs. Experiments, variants and each
job's settings (``experiments``), the configuration check (``validate``), the claims file's schema and loader
(``claims_file``), a training job's GPU request (``resources``) and the one adjustment of Snakemake's scheduler
(``scheduling``). It imports the foundation (``onenn.base``) only: never torch, pandas or the layers that
compute (``tests/repo/test_layers.py``)."""
