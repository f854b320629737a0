# The kind computed one variant at a time (docs/method.md §7): the reduced-dynamics audit. The table rule
# (tables.smk) concatenates the variants.


rule beyond:
    output:
        paths.VARIANT_TABLE,
    log:
        "logs/beyond/{experiment}/{variant}.log",
    benchmark:
        "benchmarks/beyond/{experiment}/{variant}.tsv"
    params:
        **get_code_by_kind("onenn.jobs.beyond:beyond_job", kind_entries, VARIANT_KINDS),
        kind=get_kind,
        settings=get_variant_settings,
    threads: 1
    wildcard_constraints:
        experiment=one_of(VARIANT_EXPERIMENTS),
    script:
        "../scripts/beyond.py"
