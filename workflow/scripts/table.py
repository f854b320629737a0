from onenn.analysis.tables import table_job
from onenn.pipeline.logs import job_log

with job_log(snakemake.log[0]) as log:  # noqa: F821
    table_job(
        snakemake.params.kind,  # noqa: F821
        list(snakemake.input),  # noqa: F821
        dict(snakemake.params.settings),  # noqa: F821
        experiment=snakemake.wildcards.experiment,  # noqa: F821
        output=snakemake.output[0],  # noqa: F821
        log=log,
    )
