# Test sets: one job per distinct (split, d, N, K, delta*, size), shared by every experiment that needs it.


rule test_set_uniform:
    output:
        "results/datasets/uniform/d{d}/N{N}/K{K}/n{size}.npz",
    log:
        "logs/datasets/uniform/d{d}/N{N}/K{K}/n{size}.log",
    params:
        split="uniform",
        delta=None,
        seed=config["test_sets"]["seed"],
    script:
        "../scripts/make_test_set.py"


rule test_set_separated:
    output:
        "results/datasets/separated/d{d}/N{N}/K{K}/delta{delta}/n{size}.npz",
    log:
        "logs/datasets/separated/d{d}/N{N}/K{K}/delta{delta}/n{size}.log",
    params:
        split="separated",
        delta=lambda wc: float(wc.delta),
        seed=config["test_sets"]["seed"],
    script:
        "../scripts/make_test_set.py"
