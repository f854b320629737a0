from onenn.jobs.claims import claims_job
from onenn.jobs.logs import job_log

s = snakemake.params.settings
with job_log(snakemake.log[0]) as log:
    claims_job(
        snakemake.input.claims,
        snakemake.input.schema,
        s["known"],
        dict(zip(s["experiments"], snakemake.input.tables)),
        table_path=snakemake.output.table,
        markdown_path=snakemake.output.markdown,
        log=log,
    )
