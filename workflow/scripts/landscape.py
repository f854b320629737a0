from onenn.pipeline.jobs import landscape_job
from onenn.pipeline.logs import job_log

with job_log(snakemake.log[0]) as log:
    landscape_job(
        dict(snakemake.params.settings),
        experiment=snakemake.wildcards.experiment,
        output=snakemake.output[0],
        log=log,
    )
