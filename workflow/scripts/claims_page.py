from onenn.pipeline.logs import job_log
from onenn.analysis.claims import claims_page_job

with job_log(snakemake.log[0]) as log:  # noqa: F821
    claims_page_job(snakemake.input[0], snakemake.output[0], log=log)  # noqa: F821
