# Input and parameter functions of the rules, named get_*. The logic lives in onenn.plan (no torch): the
# experiments, their runs and settings in experiments.py; every output path pattern in onenn/base/paths.py.
from onenn.base import columns, paths
from onenn.base import provenance
from onenn.plan import claims_file
from onenn.plan import experiments as ex
from onenn.plan import scheduling as res
from onenn.plan.kinds import KINDS, VARIANT_KINDS, kind_entries, summary_entries


def one_of(names):
    """A wildcard constraint that matches exactly these names (none: nothing)."""
    return "|".join(names) or "$^"


EXPERIMENTS = list(config["experiments"])
TRAIN_EXPERIMENTS = ex.experiment_names(config, kind="train")
BINARY_EXPERIMENTS = ex.experiment_names(config, kind="binary")
VARIANT_EXPERIMENTS = [
    e
    for kind in KINDS.values()
    if kind.table_source == "variants"
    for e in ex.experiment_names(config, kind=kind.name)
]
#: the experiments whose figures results/readme/ keeps that this config has
README_EXPERIMENTS = [e for e in paths.README_EXPERIMENTS if e in EXPERIMENTS]
GPUS_HERE = res.visible_gpus()  # of the machine running Snakemake (jobs run here)


def get_code(*entries):
    """The ``params`` entries of a rule's code: one ``module=fingerprint`` per onenn module its job runs (entries
    ``module:function``, onenn/base/provenance.py), so a changed module reruns exactly the jobs that run it.
    """
    return provenance.params(*entries)


def get_code_by_kind(entry, kind_entries, kinds=tuple(KINDS)):
    """As ``get_code``, for a job that runs its experiment's kind's code too (``kind_entries(kind)``)."""
    return provenance.params_by_kind([entry], kind_entries, get_kind, kinds)


def get_settings(wildcards):
    return ex.settings(config, wildcards.experiment, wildcards.variant)


# --- test sets and prompt sets ------------------------------------------------------------------------------


def get_test_set_settings(wildcards):
    """Which test set (uniform or separated), its margin and seed; a separated set has its margin's name in its
    path, and the margin itself from the configuration."""
    delta = (
        ex.delta_named(config, wildcards.delta) if "delta" in wildcards.keys() else None
    )
    return {
        "test_set": "uniform" if delta is None else "separated",
        "delta": delta,
        "seed": config["test_sets"]["seed"],
    }


def get_binary_set_settings(wildcards):
    """Which binary prompt set (test set train, uniform or separated), its margin and seed; the separated ones
    have their margin's name in their path, and the margin itself from the configuration.
    """
    delta = (
        ex.delta_named(config, wildcards.delta) if "delta" in wildcards.keys() else None
    )
    return {
        "test_set": wildcards.test_set if delta is None else "separated",
        "delta": delta,
        "seed": config["test_sets"]["seed"],
    }


# --- training and evaluation --------------------------------------------------------------------------------


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
    return ex.eval_settings(config, wildcards.experiment, wildcards.variant)


def get_test_sets(wildcards):
    s = get_settings(wildcards)
    return {test_set: ex.test_set_path(test_set, s) for test_set in columns.TEST_SETS}


def get_binary_train_set(wildcards):
    return ex.binary_set_path("train", get_settings(wildcards))


def get_binary_sets(wildcards):
    s = get_settings(wildcards)
    return {
        test_set: ex.binary_set_path(test_set, s)
        for test_set in columns.BINARY_TEST_SETS
    }


# --- per-variant jobs, tables, figures, the headline table --------------------------------------------------


def get_kind(wildcards):
    return config["experiments"][wildcards.experiment]["kind"]


def get_variant_settings(wildcards):
    return ex.job_settings(config, wildcards.experiment, wildcards.variant)


def get_table_inputs(wildcards):
    return ex.table_inputs(config, wildcards.experiment)


def get_table_settings(wildcards):
    return ex.table_settings(config, wildcards.experiment)


def get_figure(wildcards):
    return config["experiments"][wildcards.experiment]["figure"]


def get_plot_settings(wildcards):
    return config["plots"]


def get_group_by(wildcards):
    """The settings an experiment's variants vary, which its figure groups its curves by."""
    return ex.group_by(config, wildcards.experiment)


def get_figure_labels(wildcards):
    """The columns of a figure's row in the HTML report."""
    return {"experiment": wildcards.experiment, "figure": get_figure(wildcards)}


def get_tables(wildcards):
    """Every experiment's table, in config order (the order of get_kinds)."""
    return [paths.TABLE.format(experiment=e) for e in EXPERIMENTS]


def get_kinds(wildcards):
    """Experiment -> kind, in config order (the order of get_tables)."""
    return ex.kinds(config)


def get_final_outputs():
    figures = [
        pattern.format(experiment=e)
        for e in EXPERIMENTS
        for pattern in (paths.FIGURE_PNG, paths.FIGURE_PDF)
    ]
    summary = [paths.SUMMARY_TABLE, paths.SUMMARY_MARKDOWN, paths.SUMMARY_HTML]
    claims = [paths.CLAIMS_TABLE, paths.CLAIMS_MARKDOWN, paths.CLAIMS_HTML]
    return get_tables(None) + figures + summary + claims


def source(path):
    """A file of the workflow itself (the claims file, a schema), wherever Snakemake runs: relative to the working
    directory where it lies inside it, so a finished run moved or copied elsewhere keeps the same inputs.
    """
    full = os.path.join(ONENN, path)
    relative = os.path.relpath(full)
    return full if relative.startswith(os.pardir) else relative


def get_claims_known():
    """What claims may name: this run's experiments and variants, and the repository's (a preset may trim them)."""
    return claims_file.catalogue(
        *claims_file.reference_configs(config, source("config.yaml"))
    )


def get_claims_experiments(wildcards):
    """The experiments the claims read that this run has, in the order of the claims. It checks the claims file
    first, so a claim naming an unknown experiment, variant or column stops the plan before any job.
    """
    return claims_file.claim_experiments(
        source(paths.CLAIMS_FILE),
        get_claims_known(),
        source(paths.CLAIMS_SCHEMA),
        config,
    )


def get_claims_inputs(wildcards):
    return {
        "claims": source(paths.CLAIMS_FILE),
        "schema": source(paths.CLAIMS_SCHEMA),
        "tables": [
            paths.TABLE.format(experiment=e) for e in get_claims_experiments(wildcards)
        ],
    }


def get_claims_settings(wildcards):
    """The experiments of the tables, in their order, and what claims may name."""
    return {
        "experiments": get_claims_experiments(wildcards),
        "known": get_claims_known(),
    }


# --- the README's files (results/readme/; only the explicit target `readme`) -------------------------------


def get_readme_inputs(wildcards):
    """The scorecard and the tables it read, the headline table (the audit's section, the software), and the
    README's figures of this run. Without an audit experiment the plan stops here, before any job deletes the
    committed files."""
    audits = ex.experiment_names(config, kind="audit")
    if not audits:
        raise ValueError(
            "rule readme writes the audit's table (results/readme/audit.md), and this config has no experiment of "
            f"kind audit (its experiments: {', '.join(EXPERIMENTS)}); run it on config.yaml"
        )
    return {
        "claims": paths.CLAIMS_TABLE,
        "tables": get_claims_inputs(wildcards)["tables"],
        "summary": paths.SUMMARY_TABLE,
        "figures": [
            paths.README_FIGURE.format(experiment=e) for e in README_EXPERIMENTS
        ],
        "lemmas": [
            pattern.format(experiment=e)
            for e in audits
            for pattern in (paths.README_LEMMAS, paths.README_LEMMAS_FIGURE)
        ],
        "late_time": [paths.README_LATE_TIME.format(experiment=e) for e in audits],
    }


def get_config_files(wildcards):
    """The run's configuration files with their digests (the header of every page): the Snakefile's configfile
    applies first, then those of the command line."""
    return provenance.config_files(["config.yaml", *workflow.configfiles], ONENN)


def get_readme_settings(wildcards):
    """The experiments of the scorecard's tables, in their order, and the run's configuration files."""
    return {
        "experiments": get_claims_experiments(wildcards),
        "configs": get_config_files(wildcards),
    }


def get_audit_lemmas_settings(wildcards):
    """Each variant's audit settings (the quadrature's nodes, the weighted sample) and the run's configuration
    files, for the page's header."""
    return {
        "variants": {
            v: ex.job_settings(config, wildcards.experiment, v)
            for v in ex.variants(config, wildcards.experiment)
        },
        "configs": get_config_files(wildcards),
    }
