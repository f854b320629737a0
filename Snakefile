# onenn: reproduce the experiments of Athreya & Wang (arXiv:2609.01311). See README.md.
import sys

from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


# Before any job: the schema (types, bounds, unknown keys) and what a schema cannot check, every problem named by
# its key path. Schema defaults only document the keys: filling them into every experiment would override
# `defaults`, so (unlike snakemake.utils.validate) nothing is filled in.
sys.path.insert(0, workflow.basedir)  # this checkout's onenn (see common.smk)
from onenn.pipeline.validate import validate_config

validate_config(
    config,
    f"{workflow.basedir}/workflow/schemas/config.schema.yaml",
    workflow.configfiles,
)


include: "workflow/rules/common.smk"
include: "workflow/rules/datasets.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/scaling.smk"
include: "workflow/rules/summary.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/beyond.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        get_final_outputs(),
        CLAIMS_OUTPUTS,
