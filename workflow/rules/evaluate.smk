# Evaluation: every saved W of a run, on the separated and the uniform test set.


rule evaluate:
    input:
        unpack(get_test_sets),
        weights=f"{RUN_DIR}/weights.npz",
        run=f"{RUN_DIR}/run.json",
    output:
        f"{RUN_DIR}/metrics.parquet",
    log:
        "logs/evaluate/{experiment}/{variant}/seed{seed}.log",
    benchmark:
        "benchmarks/evaluate/{experiment}/{variant}/seed{seed}.tsv"
    wildcard_constraints:
        experiment="|".join(TRAIN_EXPERIMENTS) or "$^",
    threads: 1
    params:
        settings=get_eval_settings,
    script:
        "../scripts/evaluate.py"
