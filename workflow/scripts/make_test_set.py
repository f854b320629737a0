from onenn.pipeline.jobs import test_set_job
from onenn.pipeline.logs import job_log

w, p = snakemake.wildcards, snakemake.params
with job_log(snakemake.log[0]) as log:
    test_set_job(p.split, int(w.size), int(w.d), int(w.N), int(w.K), p.delta, p.seed, snakemake.output[0], log)
