from onenn.theory.landscape import landscape_job
from onenn.pipeline.logs import job_log

with job_log(snakemake.log[0]) as log:  # noqa: F821
    landscape_job(
        dict(snakemake.params.settings),  # noqa: F821
        experiment=snakemake.wildcards.experiment,  # noqa: F821
        output=snakemake.output[0],  # noqa: F821
        log=log,
    )
