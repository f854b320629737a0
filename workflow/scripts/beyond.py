from onenn.jobs.beyond import beyond_job
from onenn.jobs.logs import job_log

with job_log(snakemake.log[0]) as log:
    beyond_job(
        snakemake.params.kind,
        dict(snakemake.params.settings),
        identity=dict(snakemake.wildcards),
        output=snakemake.output[0],
        log=log,
    )
