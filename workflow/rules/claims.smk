# The scorecard: the paper's claims (workflow/claims.yaml) against this run's tables, with a verdict each
# (docs/claims.md), and its page in the HTML report.


rule claims:
    input:
        unpack(get_claims_inputs),
    output:
        table=paths.CLAIMS_TABLE,
        markdown=paths.CLAIMS_MARKDOWN,
    log:
        "logs/claims.log",
    benchmark:
        "benchmarks/claims.tsv"
    params:
        **get_code("onenn.jobs.claims:claims_job"),
        settings=get_claims_settings,
    threads: 1
    script:
        "../scripts/claims.py"


rule claims_page:
    input:
        paths.CLAIMS_MARKDOWN,
    output:
        report(
            paths.CLAIMS_HTML,
            caption="../report/claims.rst",
            category="Claims",
            labels={"table": "claims"},
        ),
    log:
        "logs/claims_page.log",
    benchmark:
        "benchmarks/claims_page.tsv"
    params:
        **get_code("onenn.jobs.summary:report_page_job"),
        title="The paper's claims",
    threads: 1
    script:
        "../scripts/report_page.py"
