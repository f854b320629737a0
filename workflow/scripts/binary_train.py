from onenn.training.binary import binary_train_job
from onenn.pipeline.logs import job_log

with job_log(snakemake.log[0]) as log:  # noqa: F821
    binary_train_job(
        dict(snakemake.params.settings),  # noqa: F821
        identity=dict(snakemake.wildcards),  # noqa: F821
        train_path=snakemake.input.train,  # noqa: F821
        weights_path=snakemake.output.weights,  # noqa: F821
        run_path=snakemake.output.run,  # noqa: F821
        threads=snakemake.threads,  # noqa: F821
        log=log,
    )
