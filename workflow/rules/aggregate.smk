# Aggregation: all runs of an experiment into one Parquet table.


rule aggregate:
    input:
        lambda wc: get_run_outputs(wc, "metrics.parquet"),
    output:
        "results/tables/{experiment}.parquet",
    log:
        "logs/aggregate/{experiment}.log",
    wildcard_constraints:
        experiment="|".join(TRAIN_EXPERIMENTS) or "$^",
    script:
        "../scripts/aggregate.py"
