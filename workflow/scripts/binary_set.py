from onenn.training.binary import binary_set_job
from onenn.pipeline.logs import job_log

w, p = snakemake.wildcards, snakemake.params  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    split = getattr(p, "split", None) or w.split
    binary_set_job(split, int(w.size), int(w.d), int(w.N), w.labels, p.delta, p.seed, snakemake.output[0], log)  # noqa: F821
