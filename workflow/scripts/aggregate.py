from onenn.pipeline.jobs import aggregate_job
from onenn.pipeline.logs import job_log

with job_log(snakemake.log[0]) as log:
    aggregate_job(list(snakemake.input), snakemake.output[0], log=log)
