from onenn.jobs.readme import late_time_job
from onenn.jobs.logs import job_log

with job_log(snakemake.log[0]) as log:
    late_time_job(snakemake.input[0], snakemake.params.configs, snakemake.output[0], log=log)
