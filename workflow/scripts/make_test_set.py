from onenn.jobs.datasets import test_set_job
from onenn.jobs.logs import job_log

w, s = snakemake.wildcards, snakemake.params.settings
with job_log(snakemake.log[0]) as log:
    test_set_job(s["test_set"], int(w.size), int(w.d), int(w.N), int(w.K), s["delta"], s["seed"], snakemake.output[0], log)
