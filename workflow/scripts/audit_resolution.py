from onenn.jobs.logs import job_log
from onenn.jobs.readme import resolution_job

with job_log(snakemake.log[0]) as log:
    resolution_job(snakemake.input[0], snakemake.params.settings["configs"], snakemake.output[0], log=log)
