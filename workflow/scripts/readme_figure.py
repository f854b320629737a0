from onenn.jobs.logs import job_log
from onenn.jobs.readme import readme_figure_job

with job_log(snakemake.log[0]) as log:
    readme_figure_job(snakemake.input[0], snakemake.output[0], log=log)
