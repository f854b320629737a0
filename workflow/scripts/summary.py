from onenn.jobs.summary import summary_job
from onenn.jobs.logs import job_log

with job_log(snakemake.log[0]) as log:
    kinds = dict(snakemake.params.kinds)
    summary_job(
        dict(zip(kinds, snakemake.input)),
        kinds,
        table_path=snakemake.output.table,
        markdown_path=snakemake.output.markdown,
        log=log,
    )
