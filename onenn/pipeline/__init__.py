"""The workflow's layer: experiments and variants, config validation, resources, settings, io, logs and the
workflow's jobs (``jobs``). Never imports torch (a test checks it): the Snakefile imports this and nothing else."""
