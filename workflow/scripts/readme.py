from onenn.jobs.logs import job_log
from onenn.jobs.readme import readme_job

s = snakemake.params.settings
with job_log(snakemake.log[0]) as log:
    readme_job(
        snakemake.input.claims,
        dict(zip(s["experiments"], snakemake.input.tables)),
        snakemake.input.summary,
        s["configs"],
        claims_path=snakemake.output.claims,
        audit_path=snakemake.output.audit,
        log=log,
    )
