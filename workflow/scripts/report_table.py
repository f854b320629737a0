from onenn.pipeline.logs import job_log
from onenn.analysis.report import report_table_job

with job_log(snakemake.log[0]) as log:  # noqa: F821
    report_table_job(snakemake.input[0], snakemake.output[0], log=log)  # noqa: F821
