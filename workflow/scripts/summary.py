from onenn.pipeline.logs import job_log
from onenn.analysis.summary import summary_job

with job_log(snakemake.log[0]) as log:  # noqa: F821
    kinds = dict(snakemake.params.kinds)  # noqa: F821
    summary_job(
        dict(zip(kinds, snakemake.input)),  # noqa: F821
        kinds,
        table_path=snakemake.output.table,  # noqa: F821
        markdown_path=snakemake.output.markdown,  # noqa: F821
        log=log,
    )
