# Input and parameter functions shared by the rules. The logic lives in onenn.pipeline.experiments (no torch).
import os
import sys

# The onenn package beside this Snakefile, for this process and for every job it starts (jobs inherit the
# environment), so a checkout runs its own code even where another copy is pip-installed.
sys.path.insert(0, workflow.basedir)
os.environ.update(
    PYTHONPATH=os.pathsep.join(
        filter(None, [workflow.basedir, os.environ.get("PYTHONPATH")])
    )
)

from onenn.pipeline import experiments as ex
from onenn.pipeline import resources as res

TRAIN_EXPERIMENTS = ex.experiment_names(config, kind="train")
SCALING_EXPERIMENTS = ex.experiment_names(config, kind="scaling")
RUN_DIR = "results/runs/{experiment}/{variant}/seed{seed}"
GPUS_HERE = (
    res.visible_gpus()
)  # GPUs of the machine running Snakemake (used when jobs run locally)


wildcard_constraints:
    experiment=r"[a-z][a-z0-9_]*",
    variant=r"[^/]+",
    seed=r"\d+",
    d=r"\d+",
    N=r"\d+",
    K=r"\d+",
    size=r"\d+",
    delta=r"[0-9.e+-]+",


def get_settings(wildcards):
    return ex.settings(config, wildcards.experiment, wildcards.variant)


def get_train_settings(wildcards):
    return ex.train_settings(
        config, wildcards.experiment, wildcards.variant, int(wildcards.seed)
    )


def jobs_run_here():
    """False when jobs are submitted elsewhere (a cluster executor; --jobs sets `nodes`, even in a dry run)."""
    return workflow.local_exec and workflow.nodes is None


def get_train_gpus(wildcards):
    """1 when the run trains on a GPU (device cuda, or auto on a cluster or a machine with a GPU), else 0."""
    return res.train_gpus(
        get_settings(wildcards)["device"], local=jobs_run_here(), gpus_here=GPUS_HERE
    )


def get_eval_settings(wildcards):
    s = get_settings(wildcards)
    return {k: s[k] for k in ("K", "loss", "c", "delta", "test_size")}


def get_test_sets(wildcards):
    s = get_settings(wildcards)
    return {split: ex.test_set_path(split, s) for split in ("uniform", "separated")}


def get_run_outputs(wildcards, name):
    return [
        f"results/runs/{wildcards.experiment}/{variant}/seed{seed}/{name}"
        for variant, seed in ex.runs(config, wildcards.experiment)
    ]


def get_figure_labels(wildcards):
    """The columns of a figure's row in the HTML report."""
    return {
        "experiment": wildcards.experiment,
        "figure": config["experiments"][wildcards.experiment]["figure"],
    }


def get_final_outputs():
    figures = expand(
        "results/figures/{experiment}.{ext}",
        experiment=list(config["experiments"]),
        ext=("png", "pdf"),
    )
    tables = expand(
        "results/tables/{experiment}.parquet", experiment=list(config["experiments"])
    )
    summary = [
        "results/tables/summary.parquet",
        "results/tables/summary.md",
        "results/tables/summary.html",
    ]
    return tables + figures + summary


# The experiments beyond the multiclass paper (workflow/rules/beyond.smk).
BINARY_EXPERIMENTS = ex.experiment_names(config, kind="binary")
PER_VARIANT_EXPERIMENTS = [
    e for k in ex.PER_VARIANT_KINDS for e in ex.experiment_names(config, kind=k)
]
LANDSCAPE_EXPERIMENTS = ex.experiment_names(config, kind="landscape")


def get_binary_sets(wildcards):
    s = get_settings(wildcards)
    return {
        split: ex.binary_set_path(split, s)
        for split in ("train", "uniform", "separated")
    }


def get_kind_settings(wildcards):
    kind = config["experiments"][wildcards.experiment]["kind"]
    keys = {"audit": ex.AUDIT_KEYS, "full_matrix": ex.FULL_MATRIX_KEYS}[kind]
    return ex.kind_settings(config, wildcards.experiment, wildcards.variant, keys)


def get_variant_tables(wildcards):
    return [
        f"results/beyond/{wildcards.experiment}/{v}.parquet"
        for v in ex.variants(config, wildcards.experiment)
    ]
