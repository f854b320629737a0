# Evaluation: every saved W of a run on the test sets (the binary experiment: on its training set too).


rule evaluate:
    input:
        unpack(get_test_sets),
        weights=paths.RUN_WEIGHTS,
        run=paths.RUN_RECORD,
    output:
        paths.RUN_METRICS,
    log:
        "logs/evaluate/{experiment}/{variant}/seed{seed}.log",
    benchmark:
        "benchmarks/evaluate/{experiment}/{variant}/seed{seed}.tsv"
    params:
        **get_code("onenn.jobs.evaluate:evaluate_job"),
        settings=get_eval_settings,
    threads: 1
    wildcard_constraints:
        experiment=one_of(TRAIN_EXPERIMENTS),
    script:
        "../scripts/evaluate.py"


rule binary_evaluate:
    input:
        unpack(get_binary_sets),
        weights=paths.RUN_WEIGHTS,
        run=paths.RUN_RECORD,
    output:
        paths.RUN_METRICS,
    log:
        "logs/binary_evaluate/{experiment}/{variant}/seed{seed}.log",
    benchmark:
        "benchmarks/binary_evaluate/{experiment}/{variant}/seed{seed}.tsv"
    params:
        **get_code("onenn.jobs.evaluate:evaluate_job"),
        settings=get_eval_settings,
    threads: 1
    wildcard_constraints:
        experiment=one_of(BINARY_EXPERIMENTS),
    script:
        "../scripts/binary_evaluate.py"
