# The README's files, committed in results/readme/: the scorecard, the audit's table and the figures the README
# and the docs show, from a finished full run. Not part of the default target (a quick run's would replace the
# full run's): after a full run, `snakemake --cores all readme`. Snakemake deletes a job's outputs before it
# runs and when it fails; `git restore results/readme` brings the committed ones back.


rule readme:
    input:
        unpack(get_readme_inputs),
    output:
        claims=paths.README_CLAIMS,
        audit=paths.README_AUDIT,
    log:
        "logs/readme.log",
    benchmark:
        "benchmarks/readme.tsv"
    params:
        **get_code("onenn.jobs.readme:readme_job"),
        settings=get_readme_settings,
    threads: 1
    script:
        "../scripts/readme.py"


# One figure of README_EXPERIMENTS, copied: `snakemake results/readme/input_dimension.png ...` copies the worked
# example's alone, from its own configuration.
rule readme_figure:
    input:
        paths.FIGURE_PNG,
    output:
        paths.README_FIGURE,
    log:
        "logs/readme_figure/{experiment}.log",
    benchmark:
        "benchmarks/readme_figure/{experiment}.tsv"
    params:
        **get_code("onenn.jobs.readme:readme_figure_job"),
    threads: 1
    wildcard_constraints:
        experiment=one_of(README_EXPERIMENTS),
    script:
        "../scripts/readme_figure.py"


# An audit experiment's resolution test: the population flow's xi1/xi2 and loss at 10 ... 1e6 and 1e12, 1e16,
# 1e20 as its nodes per variable double, and under the seed swap (t <= 1e6) (`snakemake results/readme/audit_resolution.md`; the convergence study is this file
# under the preset workflow/presets/audit_convergence.yaml).
rule audit_resolution:
    input:
        paths.TABLE,
    output:
        paths.README_RESOLUTION,
    log:
        "logs/audit_resolution/{experiment}.log",
    benchmark:
        "benchmarks/audit_resolution/{experiment}.tsv"
    params:
        **get_code("onenn.jobs.readme:resolution_job"),
        settings=get_readme_settings,
    threads: 1
    wildcard_constraints:
        experiment=one_of(ex.experiment_names(config, kind="audit")),
    script:
        "../scripts/audit_resolution.py"


# The convergence proof's inequalities (Lemmas 7-12, the review's Jensen step) along an audit experiment's flow
# and GD (docs/method.md §7.6): the page and the figure of each inequality's two sides at Lemma 12's threshold.
rule audit_lemmas:
    input:
        paths.TABLE,
    output:
        page=paths.README_LEMMAS,
        figure=paths.README_LEMMAS_FIGURE,
    log:
        "logs/audit_lemmas/{experiment}.log",
    benchmark:
        "benchmarks/audit_lemmas/{experiment}.tsv"
    params:
        **get_code("onenn.jobs.readme:lemmas_job"),
        settings=get_audit_lemmas_settings,
    threads: 1
    wildcard_constraints:
        experiment=one_of(ex.experiment_names(config, kind="audit")),
    script:
        "../scripts/audit_lemmas.py"


# An audit experiment's late-time law: the late flow (onenn/theory/reduced/late_time.py) against the population
# flow from t = 1e12 to its end, then alone far beyond (`snakemake results/readme/audit_late_time.md`).
rule audit_late_time:
    input:
        paths.TABLE,
    output:
        paths.README_LATE_TIME,
    log:
        "logs/audit_late_time/{experiment}.log",
    benchmark:
        "benchmarks/audit_late_time/{experiment}.tsv"
    params:
        **get_code("onenn.jobs.readme:late_time_job"),
        configs=get_config_files,
    threads: 1
    wildcard_constraints:
        experiment=one_of(ex.experiment_names(config, kind="audit")),
    script:
        "../scripts/audit_late_time.py"
