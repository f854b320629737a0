from onenn.jobs.summary import report_page_job
from onenn.jobs.logs import job_log

with job_log(snakemake.log[0]) as log:
    report_page_job(snakemake.input[0], snakemake.output[0], title=snakemake.params.title, log=log)
