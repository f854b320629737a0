# An experiment's table, whatever its kind (onenn.plan.kinds): the tables of its runs
# (train, binary) or of its variants (audit) concatenated, or computed here from its settings
# (scaling: the scaling identity, numpy only; landscape: the reduced loss landscape).


rule table:
    input:
        get_table_inputs,
    output:
        paths.TABLE,
    log:
        "logs/tables/{experiment}.log",
    benchmark:
        "benchmarks/tables/{experiment}.tsv"
    params:
        **get_code_by_kind("onenn.jobs.tables:table_job", kind_entries),
        kind=get_kind,
        settings=get_table_settings,
    threads: 1
    wildcard_constraints:
        experiment=one_of(EXPERIMENTS),  # not `summary` (summary.smk)
    script:
        "../scripts/table.py"
