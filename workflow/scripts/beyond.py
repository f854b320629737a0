from onenn.theory.audit import beyond_job
from onenn.pipeline.logs import job_log

with job_log(snakemake.log[0]) as log:  # noqa: F821
    beyond_job(
        snakemake.params.kind,  # noqa: F821
        dict(snakemake.params.settings),  # noqa: F821
        identity=dict(snakemake.wildcards),  # noqa: F821
        output=snakemake.output[0],  # noqa: F821
        log=log,
    )
