# The headline table: final metrics of every experiment (mean ± sd over seeds) and the scaling ratios; and its
# page in the HTML report (snakemake --report results/report.html; the figures are marked in figures.smk).


rule summary:
    input:
        get_tables,
    output:
        table=paths.SUMMARY_TABLE,
        markdown=paths.SUMMARY_MARKDOWN,
    log:
        "logs/summary.log",
    benchmark:
        "benchmarks/summary.tsv"
    params:
        **get_code("onenn.jobs.summary:summary_job", *summary_entries()),
        kinds=get_kinds,  # experiment -> kind, in the order of the inputs
    threads: 1
    script:
        "../scripts/summary.py"


rule report_table:
    input:
        paths.SUMMARY_MARKDOWN,
    output:
        report(
            paths.SUMMARY_HTML,
            caption="../report/summary.rst",
            category="Headline table",
            labels={"table": "summary"},
        ),
    log:
        "logs/report_table.log",
    benchmark:
        "benchmarks/report_table.tsv"
    params:
        **get_code("onenn.jobs.summary:report_page_job"),
        title="Headline table",
    threads: 1
    script:
        "../scripts/report_page.py"
