from onenn.pipeline.jobs import report_table_job
from onenn.pipeline.logs import job_log

with job_log(snakemake.log[0]) as log:
    report_table_job(snakemake.input[0], snakemake.output[0], log=log)
