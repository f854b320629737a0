from onenn.jobs.figures import figure_job
from onenn.jobs.logs import job_log

with job_log(snakemake.log[0]) as log:
    figure_job(
        snakemake.params.figure,
        snakemake.input[0],
        dict(snakemake.params.settings),
        [snakemake.output.png, snakemake.output.pdf],
        group_by=list(snakemake.params.group_by),
        log=log,
    )
