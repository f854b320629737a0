from onenn.pipeline.io import save_arrays
from onenn.pipeline.logs import job_log
from onenn.prompts import make_test_set

w, s = snakemake.wildcards, snakemake.params.settings  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    data = make_test_set(s["split"], int(w.size), int(w.d), int(w.N), int(w.K), s["delta"], s["seed"])
    save_arrays(snakemake.output[0], **data)  # noqa: F821
    log.info("wrote %s test set: %d prompts", s["split"], int(w.size))
