# onenn: reproduce the experiments of Athreya & Wang (arXiv:2609.01311). See README.md.
import os
import shlex
import sys

from snakemake.utils import min_version

min_version("9.0")

# this Snakefile's folder, the checkout: the main workflow's folder too, unless this one is used as a module of it
ONENN = str(workflow.current_basedir)


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


# The onenn package beside this Snakefile, for this process and for every job it starts (jobs inherit the
# environment), so a checkout runs its own code even where another copy is pip-installed.
sys.path.insert(0, ONENN)
os.environ.update(
    PYTHONPATH=os.pathsep.join(filter(None, [ONENN, os.environ.get("PYTHONPATH")]))
)

# Snakemake writes sys.executable into the commands that start jobs unquoted (snakemake/snakemake#2645, #3211):
# quoted here, once, for this process's local and Slurm jobs, so a venv in a folder with a space works.
if os.path.exists(sys.executable):
    sys.executable = shlex.quote(sys.executable)

# Before any job: the schema (types, bounds, unknown keys) and what a schema cannot check, every problem named by
# its key path. Schema defaults only document the keys: filling them into every experiment would override
# `defaults`, so (unlike snakemake.utils.validate) nothing is filled in.
from onenn.plan.validate import validate_config

validate_config(
    config,
    f"{ONENN}/workflow/schemas/config.schema.yaml",
    workflow.configfiles,
)


# Without the command line's default job rate limit, Snakemake's scheduler wakes when a job ends, not also once a
# second for every job that has ended so far (onenn/plan/scheduling.py; docs/performance.md).
onstart:
    from snakemake.logging import logger
    from onenn.plan.scheduling import adjust_scheduler

    logger.info(
        adjust_scheduler(
            getattr(workflow, "scheduler", None),
            getattr(workflow, "scheduling_settings", None),
        )
    )


# Folder names and numbers; a rule narrows `experiment` to the experiments of the kinds it serves.
wildcard_constraints:
    experiment=r"[a-z][a-z0-9_]*",
    variant=r"[^/]+",
    seed=r"\d+",
    d=r"\d+",
    N=r"\d+",
    K=r"\d+",
    size=r"\d+",
    delta=r"[0-9.e+-]+",


include: "workflow/rules/common.smk"
include: "workflow/rules/datasets.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/beyond.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/captions.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/summary.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/readme.smk"


rule all:
    default_target: True
    input:
        get_final_outputs(),
