# The headline table: final metrics of every experiment (mean ± sd over seeds) and the scaling ratios.


rule summary:
    input:
        expand(
            "results/tables/{experiment}.parquet",
            experiment=list(config["experiments"]),
        ),
    output:
        table="results/tables/summary.parquet",
        markdown="results/tables/summary.md",
    log:
        "logs/summary.log",
    params:
        kinds=ex.kinds(config),  # experiment -> kind, in the order of the inputs
    script:
        "../scripts/summary.py"
