from onenn.training.binary import binary_evaluate_job
from onenn.pipeline.logs import job_log

i = snakemake.input  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    binary_evaluate_job(
        dict(snakemake.params.settings),  # noqa: F821
        weights_path=i.weights,
        run_path=i.run,
        set_paths={"train": i.train, "uniform": i.uniform, "separated": i.separated},
        output=snakemake.output[0],  # noqa: F821
        threads=snakemake.threads,  # noqa: F821
        log=log,
    )
