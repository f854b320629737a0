from onenn.jobs.datasets import binary_set_job
from onenn.jobs.logs import job_log

w, s = snakemake.wildcards, snakemake.params.settings
with job_log(snakemake.log[0]) as log:
    binary_set_job(s["test_set"], int(w.size), int(w.d), int(w.N), w.labels, s["delta"], s["seed"], snakemake.output[0], log)
