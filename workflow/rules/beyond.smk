# Beyond the multiclass paper (docs/method.md §7): the binary paper's experiment (SGD on a fixed training set), the reduced
# loss landscape, the reduced-dynamics audit and full-matrix GD against the reduced dynamics.


rule binary_set:
    output:
        "results/datasets/binary/{split}/d{d}/N{N}/{labels}/n{size}.npz",
    log:
        "logs/datasets/binary/{split}/d{d}/N{N}/{labels}/n{size}.log",
    wildcard_constraints:
        split="train|uniform",
        labels="gaussian|rademacher",
    params:
        delta=None,
        seed=config["test_sets"]["seed"],
    script:
        "../scripts/binary_set.py"


rule binary_set_separated:
    output:
        "results/datasets/binary/separated/d{d}/N{N}/{labels}/delta{delta}/n{size}.npz",
    log:
        "logs/datasets/binary/separated/d{d}/N{N}/{labels}/delta{delta}/n{size}.log",
    params:
        split="separated",
        delta=lambda wc: float(wc.delta),
        seed=config["test_sets"]["seed"],
    script:
        "../scripts/binary_set.py"


rule binary_train:
    input:
        train=lambda wc: ex.binary_set_path("train", get_settings(wc)),
    output:
        weights=f"{RUN_DIR}/weights.npz",
        run=f"{RUN_DIR}/run.json",
    log:
        "logs/binary_train/{experiment}/{variant}/seed{seed}.log",
    benchmark:
        "benchmarks/binary_train/{experiment}/{variant}/seed{seed}.tsv"
    wildcard_constraints:
        experiment="|".join(BINARY_EXPERIMENTS) or "$^",
    threads: 1
    params:
        settings=lambda wc: ex.binary_settings(
            config, wc.experiment, wc.variant, int(wc.seed)
        ),
    script:
        "../scripts/binary_train.py"


rule binary_evaluate:
    input:
        unpack(get_binary_sets),
        weights=f"{RUN_DIR}/weights.npz",
        run=f"{RUN_DIR}/run.json",
    output:
        f"{RUN_DIR}/metrics.parquet",
    log:
        "logs/binary_evaluate/{experiment}/{variant}/seed{seed}.log",
    wildcard_constraints:
        experiment="|".join(BINARY_EXPERIMENTS) or "$^",
    threads: 1
    params:
        settings=lambda wc: {k: get_settings(wc)[k] for k in ex.BINARY_EVAL_KEYS},
    script:
        "../scripts/binary_evaluate.py"


rule binary_aggregate:
    input:
        lambda wc: get_run_outputs(wc, "metrics.parquet"),
    output:
        "results/tables/{experiment}.parquet",
    log:
        "logs/aggregate/{experiment}.log",
    wildcard_constraints:
        experiment="|".join(BINARY_EXPERIMENTS) or "$^",
    script:
        "../scripts/aggregate.py"


rule beyond:
    output:
        "results/beyond/{experiment}/{variant}.parquet",
    log:
        "logs/beyond/{experiment}/{variant}.log",
    benchmark:
        "benchmarks/beyond/{experiment}/{variant}.tsv"
    wildcard_constraints:
        experiment="|".join(PER_VARIANT_EXPERIMENTS) or "$^",
    threads: 1
    params:
        kind=lambda wc: config["experiments"][wc.experiment]["kind"],
        settings=get_kind_settings,
    script:
        "../scripts/beyond.py"


rule beyond_aggregate:
    input:
        get_variant_tables,
    output:
        "results/tables/{experiment}.parquet",
    log:
        "logs/aggregate/{experiment}.log",
    wildcard_constraints:
        experiment="|".join(PER_VARIANT_EXPERIMENTS) or "$^",
    script:
        "../scripts/aggregate.py"


rule landscape:
    output:
        "results/tables/{experiment}.parquet",
    log:
        "logs/beyond/{experiment}.log",
    benchmark:
        "benchmarks/beyond/{experiment}.tsv"
    wildcard_constraints:
        experiment="|".join(LANDSCAPE_EXPERIMENTS) or "$^",
    threads: 1
    params:
        settings=lambda wc: ex.kind_settings(
            config, wc.experiment, "default", ex.LANDSCAPE_KEYS
        ),
    script:
        "../scripts/landscape.py"
