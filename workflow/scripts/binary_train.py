from onenn.jobs.train import binary_train_job
from onenn.jobs.logs import job_log

with job_log(snakemake.log[0]) as log:
    binary_train_job(
        dict(snakemake.params.settings),
        identity=dict(snakemake.wildcards),
        train_path=snakemake.input.train,
        weights_path=snakemake.output.weights,
        run_path=snakemake.output.run,
        threads=snakemake.threads,
        log=log,
    )
