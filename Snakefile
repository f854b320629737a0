# onenn: reproduce the experiments of Athreya & Wang (arXiv:2609.01311). See README.md.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


# set_default=False: schema defaults document the keys; filling them into every experiment would override `defaults`
validate(config, "workflow/schemas/config.schema.yaml", set_default=False)


include: "workflow/rules/common.smk"
include: "workflow/rules/datasets.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/scaling.smk"
include: "workflow/rules/summary.smk"
include: "workflow/rules/plots.smk"


rule all:
    input:
        get_final_outputs(),
    default_target: True
