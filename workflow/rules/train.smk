# Training: one job per (experiment, variant, seed), for the multiclass experiments (online SGD) and the binary
# experiment (SGD on a fixed training set, docs/method.md §7.1).


rule train:
    output:
        weights=paths.RUN_WEIGHTS,
        run=paths.RUN_RECORD,
    log:
        "logs/train/{experiment}/{variant}/seed{seed}.log",
    benchmark:
        "benchmarks/train/{experiment}/{variant}/seed{seed}.tsv"
    params:
        **get_code("onenn.jobs.train:train_job"),
        settings=get_train_settings,
    threads: 1
    resources:
        gpu=get_train_gpus,  # profiles: a local `gpu` limit (default), sbatch --gpus (slurm), 0 (slurm-cpu)
    wildcard_constraints:
        experiment=one_of(TRAIN_EXPERIMENTS),
    script:
        "../scripts/train.py"


rule binary_train:
    input:
        train=get_binary_train_set,
    output:
        weights=paths.RUN_WEIGHTS,
        run=paths.RUN_RECORD,
    log:
        "logs/binary_train/{experiment}/{variant}/seed{seed}.log",
    benchmark:
        "benchmarks/binary_train/{experiment}/{variant}/seed{seed}.tsv"
    params:
        **get_code("onenn.jobs.train:binary_train_job"),
        settings=get_train_settings,
    threads: 1
    wildcard_constraints:
        experiment=one_of(BINARY_EXPERIMENTS),
    script:
        "../scripts/binary_train.py"
