"""The headline table (docs/method.md §5, §7): a tidy row per (experiment, variant, test set, quantity) by each
kind's summariser (``train_summary``, ...), with its software; its Markdown by each kind's ``*_markdown``. No torch."""

import math
from collections.abc import Callable, Sequence

import pandas as pd

from onenn.analysis.markdown import markdown_table, number
from onenn.analysis.tables import (
    AUDIT_SWAP,
    audit_at_times,
    audit_resolution,
    audit_summary,
    final_step,
    first_and_last,
    normalise_types,
    seed_stats,
    variant_order,
)
from onenn.base import provenance
from onenn.base.columns import METRICS, variant_name
from onenn.maths.family import XI_RATIO_BOUND

#: the headline table's columns, in order, and what each means (the software's columns follow them:
#: ``onenn.base.provenance``)
DESCRIPTIONS = {
    "experiment": "the experiment's name (a key of `experiments:` in the config)",
    "kind": "the experiment's kind (its `kind:` in the config, [guide.md](guide.md#configuration))",
    "variant": "the variant's name: `default`, or the settings it overrides as `key=value` joined by `+`",
    "K": "number of classes `K`, where the row is of one",
    "panel": "the scaling identity's figure panel",
    "xi1": "ξ1 of the scaling identity's point `(ξ1, ξ2)` on the family, where the row is of one",
    "xi2": "ξ2 of that point",
    "test_set": "the test set, where the row is of one",
    "quantity": "what the row measures (e.g. `accuracy` at the last step, `dist_family_ratio`, `ratio`)",
    "mean": "its mean over seeds (or its estimate)",
    "sd": "its sample sd over seeds",
    "n": "seeds (or prompts) behind it",
    "se": "its standard error, where it has one",
    "lower": "lower end of its interval",
    "upper": "upper end of its interval",
    "reference": "the value it is compared with: (K−1)/K for the scaling identity, 7/15 for the audit's ξ1/ξ2",
}
COLUMNS = tuple(DESCRIPTIONS)
#: what the software's columns that mean something else here than in a run's table mean
SOFTWARE_DESCRIPTIONS = {
    "python": "the Python version of the job that made this table",
    "gpu": f"the GPU models the experiment's runs were trained on, `; `-joined; `{provenance.NO_GPU}` on the CPU",
    "cuda": f"the CUDA versions of torch's build on those GPUs, `; `-joined; `{provenance.NO_GPU}` on the CPU",
}
#: metrics at the last saved step, per test set, in the summary's row order (alphabetical)
FINAL_METRICS = tuple(sorted(METRICS))
#: (header, quantity, test set) of the parameter diagnostics at the first and the last saved step (``first_and_last``)
PARAMETER_COLUMNS = (
    ("distance start", "dist_family_start", None),
    ("distance end", "dist_family_end", None),
    ("end / start", "dist_family_ratio", None),
    ("active distance start", "dist_family_active_start", None),
    ("active distance end", "dist_family_active_end", None),
    ("active end / start", "dist_family_active_ratio", None),
    ("label-column norm start", "label_norm_start", None),
    ("label-column norm end", "label_norm_end", None),
)


def _seed_rows(
    rows: pd.DataFrame, by: list[str], quantity: str, test_set: str | None = None, column: str = ""
) -> pd.DataFrame:
    """mean, sd and n over seeds of ``column`` (default ``quantity``) of ``rows``, per ``by``."""
    stats = seed_stats(rows, by, column or quantity)
    return stats[[*by, "mean", "sd", "n"]].assign(test_set=test_set, quantity=quantity)


def in_variant_order(out: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    order = {v: i for i, v in enumerate(variant_order(table))}
    return out.sort_values("variant", key=lambda v: v.map(order), kind="stable")


def train_summary(table: pd.DataFrame) -> pd.DataFrame:
    by = ["experiment", "variant", "K"]
    final = final_step(table)
    parts = [
        _seed_rows(rows, by, metric, str(test_set))
        for test_set, rows in final.groupby("test_set", sort=True)
        for metric in FINAL_METRICS
    ]
    one_set = final[final["test_set"] == final["test_set"].iloc[0]]  # the minibatch loss is per run, not per set
    parts.append(_seed_rows(one_set, by, "minibatch_loss"))
    for _, quantity, _ in PARAMETER_COLUMNS:
        value, end = quantity.rsplit("_", 1)
        ends = first_and_last(table, value)
        valid = ends[ends[end].notna()]
        if len(valid):
            parts.append(_seed_rows(valid, by, quantity, column=end))
    return in_variant_order(pd.concat(parts, ignore_index=True).assign(kind="train"), table)


def scaling_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Summary rows of one scaling-identity table: both losses and the ratio, per point."""
    points = table[["experiment", "panel", "xi1", "xi2", "K"]].copy()
    points["variant"] = [variant_name(p) for p in table[["panel", "xi1", "xi2", "K"]].to_dict("records")]
    parts = [
        points.assign(quantity=q, mean=table[q], n=table["prompts"], se=table[f"{q}_se"])
        for q in ("ratio", "L_MC", "L_bin")
    ]
    parts[0] = parts[0].assign(lower=table["ratio_lower"], upper=table["ratio_upper"], reference=table["reference"])
    return pd.concat(parts, ignore_index=True).assign(kind="scaling")


def _value_rows(experiment: str, variant: str, values: dict[str, float]) -> pd.DataFrame:
    """Single-number rows (n = 1): ``quantity -> mean``."""
    means = [float(v) for v in values.values()]
    return pd.DataFrame({"experiment": experiment, "variant": variant, "quantity": list(values), "mean": means, "n": 1})


#: (header, quantity, prompt set) of the binary experiment at the last saved step; the parameters (no set) are the
#: training set's
BINARY_COLUMNS = (
    ("training loss", "test_loss", "train"),
    ("MSE to 1-NN, uniform", "nn_mse", "uniform"),
    ("MSE to 1-NN, separated", "nn_mse", "separated"),
    ("distance to family", "dist_family_active", None),
    ("ξ1", "xi1", None),
    ("ξ2", "xi2", None),
)


def binary_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The binary experiment's final metrics and parameters, mean ± sd over seeds."""
    final = final_step(table)
    by = ["experiment", "variant"]
    parts = [_seed_rows(final[final["test_set"] == (t or "train")], by, q, t) for _, q, t in BINARY_COLUMNS]
    return in_variant_order(pd.concat(parts, ignore_index=True).assign(kind="binary"), table)


#: the audit's numbers per sigma (columns of ``audit_summary``)
AUDIT_QUANTITIES = (  # noqa: SIM905 (a name a line: 26 lines)
    "sigma time_end xi1_end xi2_end xi_ratio_end xi_ratio_max time_cross time_cross_error time_cross_digits "
    "xi2_minus_xi1_end reduced_loss_end loss_log_time_first loss_log_time_end gd_steps gd_flow_gap "
    "resolution_xi_ratio_gap resolution_reduced_loss_rel_gap sample_xi_ratio_gap boundary_end stuck_mass_end "
    "plain_xi_ratio_end swap_xi_ratio_rel_gap swap_reduced_loss_rel_gap loss_xi1_end asymptote stuck_loss_xi1_end"
).split()
#: times at which the headline table gives the audit's reduced loss
AUDIT_TIMES = tuple(10.0 ** (2 * k) for k in range(11))


def audit_table_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The audit per sigma: ``audit_summary``, the trajectory at ``AUDIT_TIMES`` and the resolution test."""
    experiment = str(table["experiment"].iloc[0])
    parts = []
    for row in audit_summary(table).itertuples(index=False):
        rows = _value_rows(experiment, row.variant, {q: getattr(row, q) for q in AUDIT_QUANTITIES})
        rows.loc[rows["quantity"].isin(["xi_ratio_end", "xi_ratio_max"]), "reference"] = XI_RATIO_BOUND
        rows.loc[rows["quantity"] == "reduced_loss_end", "se"] = row.reduced_loss_se_end
        parts.append(rows)
    for row in audit_at_times(table, AUDIT_TIMES).itertuples(index=False):
        values = {
            f"{q}@t={row.time:.0e}": getattr(row, q)
            for q in ("reduced_loss", "xi_ratio", "xi1", "xi2", "xi2_minus_xi1", "boundary", "stuck_mass")
        }
        parts.append(_value_rows(experiment, row.variant, values))
    for row in audit_resolution(table).itertuples(index=False):
        values = {f"{q}@{row.source}@t={row.time:.0e}": getattr(row, q) for q in ("xi_ratio", "reduced_loss")}
        parts.append(_value_rows(experiment, row.variant, values))
    return pd.concat(parts, ignore_index=True).assign(kind="audit")


def landscape_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The grid's smallest reduced loss and where it is."""
    best = table.loc[table["reduced_loss"].idxmin()]
    out = _value_rows(str(table["experiment"].iloc[0]), "default", {"reduced_loss_min": best["reduced_loss"]})
    return out.assign(xi1=best["xi1"], xi2=best["xi2"], se=best["reduced_loss_se"], kind="landscape")


def summarise(
    tables: dict[str, pd.DataFrame], summarisers: dict[str, Callable[[pd.DataFrame], pd.DataFrame]]
) -> pd.DataFrame:
    """The headline table of every experiment, in the order of ``tables``, by its kind's summariser."""
    parts, used = [], {key: {} for key in provenance.ACCELERATOR_KEYS}
    for name, table in tables.items():
        if name not in summarisers:
            raise ValueError(f"no summariser given for experiment {name!r}")
        found = set(table["experiment"].unique())
        if found != {name}:
            raise ValueError(f"the table given for experiment {name!r} holds experiments {sorted(found)}")
        parts.append(summarisers[name](table))
        for key, gpus in used.items():
            gpus[name] = provenance.gpus_used(table[key]) if key in table.columns else provenance.NO_GPU
    out = pd.concat(parts, ignore_index=True).reindex(columns=list(COLUMNS))
    out["n"] = out["n"].astype("int64")
    # the software that made this table (provenance.KEYS), and the GPUs its experiments' runs were trained on
    out = out.assign(**provenance.versions(), **{key: out["experiment"].map(gpus) for key, gpus in used.items()})
    return normalise_types(out)


# --- the headline table's Markdown ---------------------------------------------------------------------------


def titled_table(title: str, header: list[str], body: list[list[str]]) -> list[str]:
    return [title, "", markdown_table(header, body), ""]


def value_cell(values: pd.Series, variant: str, quantity: str) -> str:
    """A cell of the headline table's ``values`` (by variant and quantity); the crossing time to the digits its
    error allows, with the error."""
    value = values.get((variant, quantity), math.nan)
    digits = values.get((variant, "time_cross_digits"), math.nan)
    if quantity != "time_cross" or math.isnan(value) or math.isnan(digits):
        return number(value)
    return f"{value:.{int(digits)}g} (± {values.get((variant, 'time_cross_error'), math.nan):.1g})"


def value_table(rows: pd.DataFrame, columns: Sequence[tuple[str, str]]) -> tuple[list[str], list[list[str]]]:
    """The header and a row of ``value_cell``s per variant: ``columns`` are (header, quantity)."""
    values = rows.set_index(["variant", "quantity"])["mean"]
    body = [[v] + [value_cell(values, v, q) for _, q in columns] for v in dict.fromkeys(rows["variant"])]
    return ["variant"] + [h for h, _ in columns], body


#: (header, quantity, test set) of the training columns of the Markdown table
TRAIN_COLUMNS = (
    ("separated accuracy", "accuracy", "separated"),
    ("uniform accuracy", "accuracy", "uniform"),
    ("separated logit error", "logit_error", "separated"),
    ("uniform logit error", "logit_error", "uniform"),
    ("training loss (uniform test set)", "test_loss", "uniform"),
)


def seeds_markdown(rows: pd.DataFrame, title: str, columns: tuple) -> list[str]:
    """``title``, then a table of ``mean ± sd`` per variant: ``columns`` are (header, quantity, test set)."""
    body = []
    for variant, part in rows.groupby("variant", sort=False):
        found = {(r.quantity, None if pd.isna(r.test_set) else r.test_set): r for r in part.itertuples()}
        cells = [found.get((q, t)) for _, q, t in columns]
        n = int(cells[0].n) if cells[0] is not None else 0
        cells = ["–" if c is None or pd.isna(c.mean) else f"{c.mean:.4g} ± {c.sd:.2g}" for c in cells]
        body.append([str(variant), str(n), *cells])
    return titled_table(title, ["variant", "n"] + [h for h, _, _ in columns], body)


def train_markdown(rows: pd.DataFrame) -> list[str]:
    out = seeds_markdown(rows, "final metrics (mean ± sd over n seeds):", TRAIN_COLUMNS)
    if ((rows["quantity"] == "dist_family_start") & (rows["mean"] > 0)).any():  # W0 off the family
        out += seeds_markdown(
            rows, "parameters at the first and the last saved step (mean ± sd over n seeds):", PARAMETER_COLUMNS
        )
    return out


def scaling_markdown(rows: pd.DataFrame) -> list[str]:
    body = []
    losses = rows.set_index(["variant", "quantity"])[["mean", "se"]]
    for r in rows[rows["quantity"] == "ratio"].itertuples():
        where = [str(r.panel), f"{r.xi1:g}", f"{r.xi2:g}", str(int(r.K)), str(r.n)]  # K: float beside other kinds
        se = ["{:.4f} ± {:.4f}".format(*losses.loc[(r.variant, q)]) for q in ("L_MC", "L_bin")]
        body.append([*where, *se, f"{r.mean:.4f} [{r.lower:.4f}, {r.upper:.4f}]", f"{r.reference:.4f}"])
    header = ["panel", "ξ1", "ξ2", "K", "prompts", "L_MC ± se", "L_bin ± se", "L_MC / L_bin [interval]", "(K−1)/K"]
    title = "Ratio with its delta-method confidence interval; losses with their standard errors:"
    return titled_table(title, header, body)


def binary_markdown(rows: pd.DataFrame) -> list[str]:
    return seeds_markdown(rows, "At the last step (mean ± sd over n seeds):", BINARY_COLUMNS)


#: (header, quantity) of the audit's table: what a reader needs
AUDIT_COLUMNS = (
    ("σ", "sigma"),
    ("first t with ξ1/ξ2 > 7/15 (± its largest change at half the nodes or under the seed swap)", "time_cross"),
    ("max ξ1/ξ2", "xi_ratio_max"),
    ("t end", "time_end"),
    ("ξ1/ξ2 at the end", "xi_ratio_end"),
    ("loss at the end", "reduced_loss_end"),
    ("loss·ξ1 at the end", "loss_xi1_end"),
    ("its limit C (closed form)", "asymptote"),
)
#: (header, quantity) of the audit's detail table, at the flow's end unless the header says otherwise
DETAIL_COLUMNS = (
    ("ξ1", "xi1_end"),
    ("ξ2", "xi2_end"),
    ("ξ2 − ξ1", "xi2_minus_xi1_end"),
    ("loss·log t at t = 10", "loss_log_time_first"),
    ("loss·log t", "loss_log_time_end"),
    ("GD–flow gap", "gd_flow_gap"),
    ("r = 1 − ξ2/ξ1", "boundary_end"),
    ("mass beyond r", "stuck_mass_end"),
    ("stuck mass's share ½F(r)^N·ξ1", "stuck_loss_xi1_end"),
    ("ξ1/ξ2 gap at half the nodes", "resolution_xi_ratio_gap"),
    ("ξ1/ξ2 rel. change under the seed swap (10 ≤ t ≤ 1e6)", "swap_xi_ratio_rel_gap"),
    ("loss rel. change under the seed swap (10 ≤ t ≤ 1e6)", "swap_reduced_loss_rel_gap"),
    ("ξ1/ξ2 gap to the sample (t ≤ sample end)", "sample_xi_ratio_gap"),
    ("plain-sample ξ1/ξ2 at the sample end", "plain_xi_ratio_end"),
)
#: (name, quantity) of the main trajectory's rows at ``AUDIT_TIMES``
AT_TIMES = (
    ("loss", "reduced_loss"),
    ("ξ1/ξ2", "xi_ratio"),
    ("ξ1", "xi1"),
    ("r", "boundary"),
    ("mass beyond r", "stuck_mass"),
)


def audit_markdown(rows: pd.DataFrame) -> list[str]:
    """An audit experiment's headline section (the audit kind's renderer): its table, the detail, the flow at
    ``AUDIT_TIMES``, the resolution."""
    values = rows.set_index(["variant", "quantity"])["mean"]
    times = [f"{t:.0e}" for t in AUDIT_TIMES]
    loss_body = [
        [v, name] + [value_cell(values, v, f"{q}@t={t}") for t in times]
        for v in dict.fromkeys(rows["variant"])
        for name, q in AT_TIMES
    ]
    times_header = ["variant", "value"] + [f"t={t}" for t in times]
    return (
        titled_table(f"Lemma 12's invariant is ξ1/ξ2 ≤ 7/15 = {XI_RATIO_BOUND:.4f}:", *value_table(rows, AUDIT_COLUMNS))
        + titled_table(
            "The detail, at the flow's end unless the header says otherwise:", *value_table(rows, DETAIL_COLUMNS)
        )
        + titled_table(
            "The main trajectory (the population flow) at log-spaced times t, computed there:", times_header, loss_body
        )
        + resolution_markdown(rows, values)
    )


def resolution_markdown(rows: pd.DataFrame, values: pd.Series) -> list[str]:
    """The resolution test: ξ1/ξ2 and the loss of every population level (rows ``xi_ratio@<source>@t=<time>``)."""
    found = rows[rows["quantity"].str.startswith("xi_ratio@population")]
    if not len(found):
        return []
    keys = [q.split("@")[1:] for q in dict.fromkeys(found["quantity"])]
    sources = list(dict.fromkeys(k[0] for k in keys))
    times = list(dict.fromkeys(k[1] for k in keys))
    header = ["variant", "resolution"] + [f"ξ1/ξ2 at {t}" for t in times] + [f"loss at {t}" for t in times]
    body = []
    for v in dict.fromkeys(found["variant"]):
        for src in sources:
            label = "all nodes" if "/" not in src else f"1/{src.split('/')[1]} of the nodes per variable"
            label = "all nodes, the seed swap's uniforms" if src == AUDIT_SWAP else label
            cells = [value_cell(values, v, f"{q}@{src}@{t}") for q in ("xi_ratio", "reduced_loss") for t in times]
            body.append([v, label] + cells)
    title = (
        "The resolution test: the population flow at all its nodes and at 1/2, 1/4, ... of them per variable,"
        " and at all its nodes with the seed swap's uniforms (to the weighted sample's end):"
    )
    return titled_table(title, header, body)


def values_markdown(rows: pd.DataFrame) -> list[str]:
    return [markdown_table(*value_table(rows, [(q, q) for q in dict.fromkeys(rows["quantity"])])), ""]


def to_markdown(summary: pd.DataFrame, renderers: dict[str, Callable[[pd.DataFrame], list[str]]]) -> str:
    """The headline table as Markdown, a section per experiment by its kind's renderer, then the software."""
    lines = ["# Headline table", ""]
    for name, rows in summary.groupby("experiment", sort=False):
        kind = rows["kind"].iloc[0]
        if kind not in renderers:
            raise ValueError(f"no Markdown renderer given for kind {kind!r} (experiment {name!r})")
        lines += [f"## {name} ({kind})", "", *renderers[kind](rows)]
    if set(provenance.KEYS) <= set(summary.columns) and len(summary):
        keys = [*provenance.KEYS, *(k for k in provenance.CODE_KEYS if k in summary.columns)]
        found = summary.iloc[0][keys].to_dict()
        found |= {k: provenance.gpus_used(summary[k]) for k in provenance.ACCELERATOR_KEYS if k in summary.columns}
        lines += ["## Software", "", f"This table was made with {provenance.describe(found)}.", ""]
    return "\n".join(lines)
