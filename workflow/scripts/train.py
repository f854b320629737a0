from onenn.jobs.train import train_job
from onenn.jobs.logs import job_log

with job_log(snakemake.log[0]) as log:
    train_job(
        dict(snakemake.params.settings),
        identity=dict(snakemake.wildcards),
        weights_path=snakemake.output.weights,
        run_path=snakemake.output.run,
        threads=snakemake.threads,
        log=log,
    )
