from onenn.pipeline.jobs import report_page_job
from onenn.pipeline.logs import job_log

with job_log(snakemake.log[0]) as log:
    report_page_job(snakemake.input[0], snakemake.output[0], title=snakemake.params.title, log=log)
