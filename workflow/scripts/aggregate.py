from onenn.pipeline.logs import job_log
from onenn.analysis.tables import aggregate_files

with job_log(snakemake.log[0]) as log:  # noqa: F821
    aggregate_files(list(snakemake.input), snakemake.output[0], log=log)  # noqa: F821
