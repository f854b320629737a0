# The scorecard: the paper's claims (workflow/claims.yaml) against this run's tables, with a verdict each
# (docs/claims.md), and its page in the HTML report.
from onenn.pipeline.claims import catalogue, claim_experiments, reference_configs

CLAIMS_FILE = f"{workflow.basedir}/workflow/claims.yaml"
CLAIMS_SCHEMA = f"{workflow.basedir}/workflow/schemas/claims.schema.yaml"
# What claims may name: this run's experiments and variants, and the repository's (a preset may trim them).
CLAIMS_KNOWN = catalogue(*reference_configs(config, f"{workflow.basedir}/config.yaml"))
CLAIMS_OUTPUTS = expand("results/tables/claims.{ext}", ext=("parquet", "md", "html"))


rule claims:
    input:
        claims=CLAIMS_FILE,
        schema=CLAIMS_SCHEMA,
        # the claims file is checked here, while the plan is built: a claim naming an unknown experiment,
        # column or variant stops the run before any job
        tables=lambda wc: expand(
            "results/tables/{experiment}.parquet",
            experiment=claim_experiments(
                CLAIMS_FILE, CLAIMS_KNOWN, CLAIMS_SCHEMA, config
            ),
        ),
    output:
        table="results/tables/claims.parquet",
        markdown="results/tables/claims.md",
    log:
        "logs/claims.log",
    benchmark:
        "benchmarks/claims.tsv"
    threads: 1
    params:
        # the experiments of the tables, in their order
        experiments=lambda wc: claim_experiments(
            CLAIMS_FILE, CLAIMS_KNOWN, CLAIMS_SCHEMA, config
        ),
        known=CLAIMS_KNOWN,
    script:
        "../scripts/claims.py"


rule claims_page:
    input:
        "results/tables/claims.md",
    output:
        report(
            "results/tables/claims.html",
            caption="../report/claims.rst",
            category="Claims",
            labels={"table": "claims"},
        ),
    log:
        "logs/claims_page.log",
    script:
        "../scripts/claims_page.py"
