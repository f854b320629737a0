from onenn.jobs.tables import table_job
from onenn.jobs.logs import job_log

with job_log(snakemake.log[0]) as log:
    table_job(
        snakemake.params.kind,
        list(snakemake.input),
        dict(snakemake.params.settings),
        experiment=snakemake.wildcards.experiment,
        output=snakemake.output[0],
        log=log,
    )
