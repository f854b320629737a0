from onenn.pipeline.logs import job_log
from onenn.training.train import train_job

with job_log(snakemake.log[0]) as log:  # noqa: F821
    train_job(
        dict(snakemake.params.settings),  # noqa: F821
        identity=dict(snakemake.wildcards),  # noqa: F821
        weights_path=snakemake.output.weights,  # noqa: F821
        run_path=snakemake.output.run,  # noqa: F821
        threads=snakemake.threads,  # noqa: F821
        log=log,
    )
