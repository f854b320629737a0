# The scaling identity (experiment 2): no training; both losses estimated on sampled prompts (numpy only).


rule scaling:
    output:
        "results/tables/{experiment}.parquet",
    log:
        "logs/scaling/{experiment}.log",
    benchmark:
        "benchmarks/scaling/{experiment}.tsv"
    wildcard_constraints:
        experiment="|".join(SCALING_EXPERIMENTS) or "$^",
    threads: 1
    params:
        settings=lambda wc: ex.scaling_settings(config, wc.experiment),
    script:
        "../scripts/scaling.py"
