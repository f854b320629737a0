# The report's captions of the figures: recorded_category, evaluated by --report only, refuses a
# config that differs from what an experiment's table recorded; scale_labels states the run's scale against the
# repository's config.yaml, for the caption and workflow.rst.

from onenn.plan.kinds import kind_named

# the settings workflow/report/figure.rst states, where an experiment's table records them
CAPTION_KEYS = ("steps", "seeds", "test_size", "delta", "epochs", "train_size")
CAPTION_KEYS += ("d", "N", "grid", "prompts", "n_plain")


def recorded_category(wildcards, input):
    """The figure's report category, once each setting its caption states is, per variant, the one its table
    recorded; else the report is refused, naming the setting and the remedy."""
    import pandas as pd

    name, table = wildcards.experiment, pd.read_parquet(input[0])
    table = table if "variant" in table else table.assign(variant="default")
    configured = ex.variants(config, name)
    for variant in sorted(set(table["variant"]) | set(configured)):
        rows = table[table["variant"] == variant]
        if rows.empty or variant not in configured:
            there = ("absent", "present") if rows.empty else ("present", "absent")
            refuse(name, f"variant {variant}", "the variant", *there)
        wanted = ex.settings(config, name, variant)
        keys = caption_keys(name)  # the values of a sweep: the variants' names
        found = {k: rows[k].unique() for k in keys if k in wanted and k in rows}
        if "seeds" in keys:  # the other kinds' seed is a setting
            found["seeds"] = [rows["seed"].nunique()]
        for key, values in found.items():
            recorded = ", ".join(map(columns.format_value, values))
            if recorded != columns.format_value(wanted[key]):
                refuse(name, f"variant {variant}", key, recorded, wanted[key])
    for panel, wanted in config["experiments"][name].get("panels", {}).items():
        prompts = table.loc[table.get("panel") == panel, "prompts"].unique()
        recorded = ", ".join(map(columns.format_value, prompts))
        if recorded != columns.format_value(wanted["prompts"]):
            refuse(name, f"panel {panel}", "prompts", recorded, wanted["prompts"])
    return name


def refuse(experiment, where, key, recorded, configured):
    raise WorkflowError(
        f"--report: experiments.{experiment}, {where}: its table records {key} "
        f"= {recorded}, the config says {configured}, and the captions would state the "
        "config's. Pass the --configfile the run was made with (a quick run: "
        "--configfile config.yaml workflow/presets/quick.yaml)."
    )


def caption_keys(experiment):
    """The settings the caption states of an experiment of its kind."""
    kind = config["experiments"][experiment]["kind"]
    own = kind_named(kind).settings_keys
    train = {"train": ("seeds", "test_size", "delta"), "binary": ("seeds",)}.get(
        kind, ()
    )
    return [k for k in CAPTION_KEYS if k in own or k in train]


def scale_labels(wildcards):
    """The figure's labels in the report, and its scale: this run's settings (checked by
    recorded_category) that differ from the repository's config.yaml, the paper's."""
    name = wildcards.experiment
    here, full = claims_file.reference_configs(config, source("config.yaml"))
    paper = ex.resolved_settings(full, name, {}) if name in full["experiments"] else {}
    here = ex.resolved_settings(here, name, {})
    keys = [k for k in caption_keys(name) if k not in ("test_size", "delta")]
    short = [
        f"{k} {here[k]} (the paper's {paper[k]})"
        for k in keys
        if paper.get(k, here.get(k)) != here.get(k)
    ]
    panels = full["experiments"].get(name, {}).get("panels", {})
    for panel, p in config["experiments"][name].get("panels", {}).items():
        if p["prompts"] != panels.get(panel, p)["prompts"]:
            short.append(
                f"{panel} {p['prompts']} prompts (the paper's {panels[panel]['prompts']})"
            )
    scale = f"not the paper's: {', '.join(short)}" if short else "the paper's"
    return {**get_figure_labels(wildcards), "scale": scale}
