from onenn.jobs.evaluate import evaluate_job
from onenn.jobs.logs import job_log

i = snakemake.input
with job_log(snakemake.log[0]) as log:
    evaluate_job(
        dict(snakemake.params.settings),
        identity=dict(snakemake.wildcards),
        weights_path=i.weights,
        run_path=i.run,
        test_set_paths={"train": i.train, "uniform": i.uniform, "separated": i.separated},
        output=snakemake.output[0],
        log=log,
        kind="binary",
    )
