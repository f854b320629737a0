# The HTML report (snakemake --report results/report.html): the figures are marked in plots.smk; here the
# headline table, written by the summary rule as Markdown, becomes an HTML page the report shows inline.


rule report_table:
    input:
        "results/tables/summary.md",
    output:
        report(
            "results/tables/summary.html",
            caption="../report/summary.rst",
            category="Headline table",
            labels={"table": "summary"},
        ),
    log:
        "logs/report_table.log",
    script:
        "../scripts/report_table.py"
