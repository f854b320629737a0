from onenn.pipeline.jobs import binary_set_job
from onenn.pipeline.logs import job_log

w, p = snakemake.wildcards, snakemake.params
with job_log(snakemake.log[0]) as log:
    split = getattr(p, "split", None) or w.split  # the separated sets' rule names it; the others' path does
    binary_set_job(split, int(w.size), int(w.d), int(w.N), w.labels, p.delta, p.seed, snakemake.output[0], log)
