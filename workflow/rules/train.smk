# Training: one job per (experiment, variant, seed).


rule train:
    output:
        weights=f"{RUN_DIR}/weights.npz",
        run=f"{RUN_DIR}/run.json",
    log:
        "logs/train/{experiment}/{variant}/seed{seed}.log",
    benchmark:
        "benchmarks/train/{experiment}/{variant}/seed{seed}.tsv"
    wildcard_constraints:
        experiment="|".join(TRAIN_EXPERIMENTS) or "$^",
    threads: 1
    resources:
        gpu=get_train_gpus,  # profiles: a local `gpu` limit (default), sbatch --gpus (slurm), 0 (slurm-cpu)
    params:
        settings=get_train_settings,
    script:
        "../scripts/train.py"
