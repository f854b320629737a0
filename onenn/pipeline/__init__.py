"""The workflow's layer: experiments and variants, config validation, resources, settings, io, logs and the
job entry points. Never imports torch (a test checks it): the Snakefile imports this and nothing else."""
