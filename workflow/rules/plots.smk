# Figures: one seaborn figure per experiment, PNG and PDF, its curves grouped by the settings its variants
# vary. The PNG goes into the HTML report (snakemake --report results/report.html), under the experiment's
# name, with the caption of
# workflow/report/figure.rst: the experiment, the text of its figure (workflow/report/figures/<figure>.rst)
# and the scale of the run.


rule figure:
    input:
        "results/tables/{experiment}.parquet",
    output:
        png=report(
            "results/figures/{experiment}.png",
            caption="../report/figure.rst",
            category="{experiment}",
            labels=get_figure_labels,
        ),
        pdf="results/figures/{experiment}.pdf",
    log:
        "logs/figures/{experiment}.log",
    params:
        figure=lambda wc: config["experiments"][wc.experiment]["figure"],
        # the settings the variants vary: the figure groups its curves by them (a new sweep reruns it)
        group_by=lambda wc: ex.group_by(config, wc.experiment),
        style=config["plots"],
    script:
        "../scripts/figure.py"
