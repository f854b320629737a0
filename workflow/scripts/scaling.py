from onenn.pipeline.jobs import scaling_job
from onenn.pipeline.logs import job_log

with job_log(snakemake.log[0]) as log:
    scaling_job(
        dict(snakemake.params.settings),
        experiment=snakemake.wildcards.experiment,
        output=snakemake.output[0],
        log=log,
    )
