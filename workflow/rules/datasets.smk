# Test sets and the binary experiment's prompt sets: one job per distinct file, shared by every experiment that
# needs it.


rule test_set_uniform:
    output:
        paths.UNIFORM_SET,
    log:
        "logs/datasets/uniform/d{d}/N{N}/K{K}/n{size}.log",
    benchmark:
        "benchmarks/datasets/uniform/d{d}/N{N}/K{K}/n{size}.tsv"
    params:
        **get_code("onenn.jobs.datasets:test_set_job"),
        settings=get_test_set_settings,
    threads: 1
    script:
        "../scripts/make_test_set.py"


rule test_set_separated:
    output:
        paths.SEPARATED_SET,
    log:
        "logs/datasets/separated/d{d}/N{N}/K{K}/delta{delta}/n{size}.log",
    benchmark:
        "benchmarks/datasets/separated/d{d}/N{N}/K{K}/delta{delta}/n{size}.tsv"
    params:
        **get_code("onenn.jobs.datasets:test_set_job"),
        settings=get_test_set_settings,
    threads: 1
    script:
        "../scripts/make_test_set.py"


rule binary_set:
    output:
        paths.BINARY_SET,
    log:
        "logs/datasets/binary/{test_set}/d{d}/N{N}/{labels}/n{size}.log",
    benchmark:
        "benchmarks/datasets/binary/{test_set}/d{d}/N{N}/{labels}/n{size}.tsv"
    params:
        **get_code("onenn.jobs.datasets:binary_set_job"),
        settings=get_binary_set_settings,
    threads: 1
    wildcard_constraints:
        test_set=one_of(paths.BINARY_SET_TEST_SETS),
        labels="gaussian|rademacher",
    script:
        "../scripts/binary_set.py"


rule binary_set_separated:
    output:
        paths.BINARY_SEPARATED_SET,
    log:
        "logs/datasets/binary/separated/d{d}/N{N}/{labels}/delta{delta}/n{size}.log",
    benchmark:
        "benchmarks/datasets/binary/separated/d{d}/N{N}/{labels}/delta{delta}/n{size}.tsv"
    params:
        **get_code("onenn.jobs.datasets:binary_set_job"),
        settings=get_binary_set_settings,
    threads: 1
    wildcard_constraints:
        labels="gaussian|rademacher",
    script:
        "../scripts/binary_set.py"
