from onenn.pipeline.logs import job_log
from onenn.analysis.claims import claims_job

with job_log(snakemake.log[0]) as log:  # noqa: F821
    claims_job(
        snakemake.input.claims,  # noqa: F821
        snakemake.input.schema,  # noqa: F821
        snakemake.params.known,  # noqa: F821
        dict(zip(snakemake.params.experiments, snakemake.input.tables)),  # noqa: F821
        table_path=snakemake.output.table,  # noqa: F821
        markdown_path=snakemake.output.markdown,  # noqa: F821
        log=log,
    )
