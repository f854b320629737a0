from onenn.jobs.logs import job_log
from onenn.jobs.readme import lemmas_job

s = snakemake.params.settings
with job_log(snakemake.log[0]) as log:
    lemmas_job(
        snakemake.input[0],
        s["variants"],
        s["configs"],
        snakemake.output.page,
        snakemake.output.figure,
        log=log,
    )
