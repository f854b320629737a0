# Figures: one seaborn figure per experiment, PNG and PDF, its curves grouped by the settings its variants
# vary. The PNG goes into the HTML report (snakemake --report results/report.html), under the experiment's
# name, with the caption of
# workflow/report/figure.rst: the experiment, the text of its figure (workflow/report/figures/<figure>.rst)
# and the scale of the run. The caption reads the config: its category (recorded_category), evaluated by
# --report only, refuses a config that differs from what the experiment's table recorded; its labels
# (scale_labels) state the run's scale against the repository's config.yaml, for the caption and workflow.rst.


rule figure:
    input:
        paths.TABLE,
    output:
        png=report(
            paths.FIGURE_PNG,
            caption="../report/figure.rst",
            category=recorded_category,
            labels=scale_labels,
        ),
        pdf=paths.FIGURE_PDF,
    log:
        "logs/figures/{experiment}.log",
    benchmark:
        "benchmarks/figures/{experiment}.tsv"
    params:
        **get_code("onenn.jobs.figures:figure_job"),
        figure=get_figure,
        settings=get_plot_settings,
        # the settings the variants vary: the figure groups its curves by them (a new sweep reruns it)
        group_by=get_group_by,
    threads: 1
    script:
        "../scripts/figure.py"
