"""The headline table: every experiment's results in one place, as Parquet and as Markdown (no torch).

One tidy row per (experiment, variant, test set, quantity). Training experiments: the metrics at the last
saved step (mean, sd and n over seeds), and the parameter diagnostics at the first and the last step
(distance to the family, over the whole matrix and over the blocks the loss depends on, with the per-seed
ratio end/start; norm of the label columns). Scaling experiments: ``L_MC``, ``L_bin`` (with their standard
errors) and the ratio with its interval, next to the prediction ``(K − 1)/K`` in ``reference``. Beyond the
paper (docs/method.md §7): the binary experiment's final metrics (mean ± sd over seeds); the audit's numbers per sigma
(``onenn.analysis.tables.audit_summary``, ``xi1/xi2`` next to 7/15 in ``reference``) and its reduced loss at
log-spaced times (``quantity`` ``reduced_loss@t=1e+03`` ...); the landscape's minimum; full-matrix GD's distance
to the family (over the blocks that can move) and to the reduced trajectory. Every row also records the software that made it (``onenn.base.provenance``: the versions of
python and of ``provenance.PACKAGES``, and the GPUs its experiment's runs were trained on), which the Markdown
states at its end.
"""

from __future__ import annotations

import math
from collections.abc import Callable

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
    "kind": "the experiment's kind (its `kind:` in the config, [configuration.md](configuration.md))",
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
#: parameter diagnostics at the first and the last saved step
PARAMETERS = ("dist_family", "dist_family_active", "label_norm")


def _stats_rows(stats: pd.DataFrame, quantity: str, test_set: str | None) -> pd.DataFrame:
    """``seed_stats`` output (by experiment, variant, K) as summary rows."""
    rows = stats[["experiment", "variant", "K", "mean", "sd", "n"]].copy()
    rows["test_set"] = test_set
    rows["quantity"] = quantity
    return rows


def train_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Summary rows of one training experiment's table."""
    by = ["experiment", "variant", "K"]
    final = final_step(table)
    parts = []
    for test_set, rows in final.groupby("test_set", sort=True):
        for metric in FINAL_METRICS:
            parts.append(_stats_rows(seed_stats(rows, by, metric), metric, str(test_set)))
    one_set = final[final["test_set"] == final["test_set"].iloc[0]]  # the minibatch loss is per run, not per set
    parts.append(_stats_rows(seed_stats(one_set, by, "minibatch_loss"), "minibatch_loss", None))
    for value in PARAMETERS:
        ends = first_and_last(table, value)
        for end in ("start", "end", "ratio"):
            if value == "label_norm" and end == "ratio":
                continue
            valid = ends[ends[end].notna()]
            if len(valid):
                parts.append(_stats_rows(seed_stats(valid, by, end), f"{value}_{end}", None))
    out = pd.concat(parts, ignore_index=True)
    out["kind"] = "train"
    order = {v: i for i, v in enumerate(variant_order(table))}
    return out.sort_values("variant", key=lambda v: v.map(order), kind="stable")


def scaling_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Summary rows of one scaling-identity table: both losses and the ratio, per point."""
    parts = []
    for quantity, se, lower, upper in (
        ("ratio", "ratio_se", "ratio_lower", "ratio_upper"),
        ("L_MC", "L_MC_se", None, None),
        ("L_bin", "L_bin_se", None, None),
    ):
        rows = table[["experiment", "panel", "xi1", "xi2", "K"]].copy()
        rows["variant"] = [
            variant_name({"panel": p, "xi1": a, "xi2": b, "K": k})
            for p, a, b, k in zip(table["panel"], table["xi1"], table["xi2"], table["K"])
        ]
        rows["quantity"] = quantity
        rows["mean"] = table[quantity]
        rows["n"] = table["prompts"]
        rows["se"] = table[se]
        if lower:
            rows["lower"], rows["upper"], rows["reference"] = table[lower], table[upper], table["reference"]
        parts.append(rows)
    out = pd.concat(parts, ignore_index=True)
    out["kind"] = "scaling"
    return out


def _value_rows(experiment: str, variant: str, values: dict[str, float], **extra) -> pd.DataFrame:
    """Single-number rows (n = 1): ``quantity -> mean``."""
    rows = pd.DataFrame(
        {
            "experiment": experiment,
            "variant": variant,
            "quantity": list(values),
            "mean": [float(v) for v in values.values()],
            "n": 1,
        }
    )
    for key, value in extra.items():
        rows[key] = value
    return rows


#: metrics of the binary experiment at the last saved step, per prompt set
BINARY_METRICS = (("train", "test_loss"), ("uniform", "nn_mse"), ("separated", "nn_mse"))
BINARY_PARAMETERS = ("dist_family_active", "xi1", "xi2")


def binary_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Final metrics of the binary experiment, mean ± sd over seeds: training loss, MSE to the 1-NN predictor on
    the uniform and the separated set, the distance to the family and (xi1, xi2)."""
    final = final_step(table)
    by = ["experiment", "variant"]
    parts = []
    for test_set, metric in BINARY_METRICS:
        stats = seed_stats(final[final["test_set"] == test_set], by, metric)
        parts.append(stats[by + ["mean", "sd", "n"]].assign(test_set=test_set, quantity=metric))
    one_set = final[final["test_set"] == "train"]
    for value in BINARY_PARAMETERS:
        parts.append(seed_stats(one_set, by, value)[by + ["mean", "sd", "n"]].assign(quantity=value))
    out = pd.concat(parts, ignore_index=True)
    out["kind"] = "binary"
    order = {v: i for i, v in enumerate(variant_order(table))}
    return out.sort_values("variant", key=lambda v: v.map(order), kind="stable")


#: the audit's numbers per sigma (columns of ``audit_summary``)
AUDIT_QUANTITIES = (
    "sigma",
    "time_end",
    "xi1_end",
    "xi2_end",
    "xi_ratio_end",
    "xi_ratio_max",
    "time_cross",
    "time_cross_error",
    "time_cross_digits",
    "xi2_minus_xi1_end",
    "reduced_loss_end",
    "loss_log_time_first",
    "loss_log_time_end",
    "gd_steps",
    "gd_flow_gap",
    "resolution_xi_ratio_gap",
    "resolution_reduced_loss_rel_gap",
    "sample_xi_ratio_gap",
    "boundary_end",
    "stuck_mass_end",
    "plain_xi_ratio_end",
    "swap_xi_ratio_rel_gap",
    "swap_reduced_loss_rel_gap",
    "loss_xi1_end",
    "asymptote",
    "stuck_loss_xi1_end",
)
#: times at which the headline table gives the audit's reduced loss
AUDIT_TIMES = tuple(10.0 ** (2 * k) for k in range(11))


def audit_table_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The audit per sigma: the numbers behind the verdict, and the trajectory at log-spaced times."""
    experiment = str(table["experiment"].iloc[0])
    parts = []
    for row in audit_summary(table).itertuples(index=False):
        values = {q: getattr(row, q) for q in AUDIT_QUANTITIES}
        rows = _value_rows(experiment, row.variant, values)
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
    out = pd.concat(parts, ignore_index=True)
    out["kind"] = "audit"
    return out


def landscape_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The grid's smallest reduced loss and where it is."""
    best = table.loc[table["reduced_loss"].idxmin()]
    out = _value_rows(
        str(table["experiment"].iloc[0]),
        "default",
        {"reduced_loss_min": best["reduced_loss"]},
        xi1=best["xi1"],
        xi2=best["xi2"],
    )
    out["se"] = best["reduced_loss_se"]
    out["kind"] = "landscape"
    return out


def full_matrix_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per variant: the largest distance of W to the family and to the reduced trajectory, and the final xi."""
    parts = []
    for variant, part in table.groupby("variant", sort=True):
        end = part.sort_values("step").iloc[-1]
        values = {
            "dist_family_active_max": part["dist_family_active"].max(),
            "xi_gap_max": part["xi_gap"].max(),
            "xi1_end": end["xi1"],
            "xi1_reduced_end": end["xi1_reduced"],
            "xi2_end": end["xi2"],
            "xi2_reduced_end": end["xi2_reduced"],
            "steps": end["step"],
            "prompts": end["prompts"],
        }
        parts.append(_value_rows(str(end["experiment"]), variant, values))
    out = pd.concat(parts, ignore_index=True)
    out["kind"] = "full_matrix"
    return out


def summarise(
    tables: dict[str, pd.DataFrame], summarisers: dict[str, Callable[[pd.DataFrame], pd.DataFrame]]
) -> pd.DataFrame:
    """The headline table of every experiment, in the order of ``tables``; ``summarisers`` gives each experiment's
    function, its kind's (``onenn.plan.kinds``: ``train_summary``, ``scaling_summary``, ...)."""
    parts, used = [], {}
    for name, table in tables.items():
        if name not in summarisers:
            raise ValueError(f"no summariser given for experiment {name!r}")
        found = set(table["experiment"].unique())
        if found != {name}:
            raise ValueError(f"the table given for experiment {name!r} holds experiments {sorted(found)}")
        parts.append(summarisers[name](table))
        used[name] = {key: gpus(table, key) for key in provenance.ACCELERATOR_KEYS}
    out = pd.concat(parts, ignore_index=True).reindex(columns=list(COLUMNS))
    out["n"] = out["n"].astype("int64")
    # python and the packages (provenance.KEYS): the software that made this table; gpu, cuda: those its
    # experiment's runs were trained on
    out = out.assign(**provenance.versions())
    for key in provenance.ACCELERATOR_KEYS:
        out[key] = out["experiment"].map(lambda name, key=key: used[name][key])
    return normalise_types(out)


def gpus(table: pd.DataFrame, key: str) -> str:
    """The distinct values of an experiment table's column ``gpu`` (or ``cuda``) other than ``NO_GPU``, joined by
    ``; ``: the GPUs its runs were trained on; ``NO_GPU`` where none was (or the table predates the column)."""
    return provenance.gpus_used(table[key]) if key in table.columns else provenance.NO_GPU


# -------------------------------------------------------------------------------------------------------
# Markdown
# -------------------------------------------------------------------------------------------------------


def mean_sd(mean: float, sd: float) -> str:
    return "–" if pd.isna(mean) else f"{mean:.4g} ± {sd:.2g}"


def _lookup(rows: pd.DataFrame, quantity: str, test_set: str | None = None) -> pd.Series | None:
    hit = rows[
        (rows["quantity"] == quantity) & (rows["test_set"].isna() if test_set is None else rows["test_set"] == test_set)
    ]
    return hit.iloc[0] if len(hit) else None


#: (header, quantity, test set) of the training columns of the Markdown table
TRAIN_COLUMNS = (
    ("separated accuracy", "accuracy", "separated"),
    ("uniform accuracy", "accuracy", "uniform"),
    ("separated logit error", "logit_error", "separated"),
    ("uniform logit error", "logit_error", "uniform"),
    ("training loss (uniform test set)", "test_loss", "uniform"),
)
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


def train_markdown(rows: pd.DataFrame) -> list[str]:
    out = []
    perturbed = (rows["quantity"] == "dist_family_start") & (rows["mean"] > 0)
    groups = [("final metrics", TRAIN_COLUMNS)]
    if perturbed.any():  # with W0 on the family both start at 0: only perturbed starts have something to show
        groups.append(("parameters at the first and the last saved step", PARAMETER_COLUMNS))
    for title, columns in groups:
        body = []
        for variant, part in rows.groupby("variant", sort=False):
            first = _lookup(part, columns[0][1], columns[0][2])
            cells = [_lookup(part, q, t) for _, q, t in columns]
            n = int(first["n"]) if first is not None else 0
            body.append([str(variant), str(n)] + [mean_sd(c["mean"], c["sd"]) if c is not None else "–" for c in cells])
        out += [
            f"{title} (mean ± sd over n seeds):",
            "",
            markdown_table(["variant", "n"] + [h for h, _, _ in columns], body),
            "",
        ]
    return out


def scaling_markdown(rows: pd.DataFrame) -> list[str]:
    body = []
    ratio = rows[rows["quantity"] == "ratio"]
    for r in ratio.itertuples():
        point = rows[rows["variant"] == r.variant]
        mc = point[point["quantity"] == "L_MC"].iloc[0]
        binary = point[point["quantity"] == "L_bin"].iloc[0]
        body.append(
            [
                str(r.panel),
                f"{r.xi1:g}",
                f"{r.xi2:g}",
                str(int(r.K)),  # K is a float column when another kind's rows have none
                str(r.n),
                f"{mc['mean']:.4f} ± {mc['se']:.4f}",
                f"{binary['mean']:.4f} ± {binary['se']:.4f}",
                f"{r.mean:.4f} [{r.lower:.4f}, {r.upper:.4f}]",
                f"{r.reference:.4f}",
            ]
        )
    header = ["panel", "ξ1", "ξ2", "K", "prompts", "L_MC ± se", "L_bin ± se", "L_MC / L_bin [interval]", "(K−1)/K"]
    return [
        "Ratio with its delta-method confidence interval; losses with their standard errors:",
        "",
        markdown_table(header, body),
        "",
    ]


def binary_markdown(rows: pd.DataFrame) -> list[str]:
    columns = (
        ("training loss", "test_loss", "train"),
        ("MSE to 1-NN, uniform", "nn_mse", "uniform"),
        ("MSE to 1-NN, separated", "nn_mse", "separated"),
        ("distance to family", "dist_family_active", None),
        ("ξ1", "xi1", None),
        ("ξ2", "xi2", None),
    )
    body = []
    for variant, part in rows.groupby("variant", sort=False):
        cells = [_lookup(part, q, t) for _, q, t in columns]
        body.append([str(variant), str(int(cells[0]["n"]))] + [mean_sd(c["mean"], c["sd"]) for c in cells])
    return [
        "At the last step (mean ± sd over n seeds):",
        "",
        markdown_table(["variant", "n"] + [h for h, _, _ in columns], body),
        "",
    ]


def audit_markdown(rows: pd.DataFrame) -> list[str]:
    columns = (
        ("σ", "sigma"),
        ("t end", "time_end"),
        ("ξ1", "xi1_end"),
        ("ξ2", "xi2_end"),
        ("ξ1/ξ2", "xi_ratio_end"),
        ("max ξ1/ξ2", "xi_ratio_max"),
        ("first t with ξ1/ξ2 > 7/15", "time_cross"),
        ("ξ2 − ξ1", "xi2_minus_xi1_end"),
        ("loss", "reduced_loss_end"),
        ("loss·log t at t = 10", "loss_log_time_first"),
        ("loss·log t at the end", "loss_log_time_end"),
        ("GD–flow gap", "gd_flow_gap"),
        ("r = 1 − ξ2/ξ1", "boundary_end"),
        ("mass beyond r", "stuck_mass_end"),
        ("ξ1/ξ2 gap at half the nodes", "resolution_xi_ratio_gap"),
        ("ξ1/ξ2 rel. change under the seed swap (10 ≤ t ≤ 1e6)", "swap_xi_ratio_rel_gap"),
        ("loss rel. change under the seed swap (10 ≤ t ≤ 1e6)", "swap_reduced_loss_rel_gap"),
        ("ξ1/ξ2 gap to the sample (t ≤ sample end)", "sample_xi_ratio_gap"),
        ("plain-sample ξ1/ξ2 at the sample end", "plain_xi_ratio_end"),
        ("loss·ξ1 at the end", "loss_xi1_end"),
        ("its limit C (closed form)", "asymptote"),
        ("stuck mass's share ½F(r)^N·ξ1", "stuck_loss_xi1_end"),
    )
    values = rows.set_index(["variant", "quantity"])["mean"]
    variants = list(dict.fromkeys(rows["variant"]))
    body = [[v] + [_audit_cell(values, v, q) for _, q in columns] for v in variants]
    times = [f"{t:.0e}" for t in AUDIT_TIMES]
    at_times = (
        ("loss", "reduced_loss"),
        ("ξ1/ξ2", "xi_ratio"),
        ("ξ1", "xi1"),
        ("r", "boundary"),
        ("mass beyond r", "stuck_mass"),
    )
    loss_body = [
        [v, name] + [number(values.get((v, f"{q}@t={t}"), float("nan"))) for t in times]
        for v in variants
        for name, q in at_times
    ]
    return [
        f"Lemma 12's invariant is ξ1/ξ2 ≤ 7/15 = {XI_RATIO_BOUND:.4f}:",
        "",
        markdown_table(["variant"] + [h for h, _ in columns], body),
        "",
        "The main trajectory (the population flow) at log-spaced times t:",
        "",
        markdown_table(["variant", "value"] + [f"t={t}" for t in times], loss_body),
        "",
    ] + resolution_markdown(rows)


def _audit_cell(values: pd.Series, variant: str, quantity: str) -> str:
    """One cell of the audit's table: the crossing time to the digits its error allows (``time_cross_digits``,
    with the error), the others by ``number``."""
    value = values.get((variant, quantity), float("nan"))
    if quantity != "time_cross" or math.isnan(value):
        return number(value)
    digits = values.get((variant, "time_cross_digits"), float("nan"))
    error = values.get((variant, "time_cross_error"), float("nan"))
    if math.isnan(digits):
        return number(value)
    return f"{value:.{int(digits)}g} (± {error:.1g})"


def resolution_markdown(rows: pd.DataFrame) -> list[str]:
    """The resolution test: ξ1/ξ2 and the loss of every population level at the times of
    ``tables.RESOLUTION_TIMES`` (from the rows ``xi_ratio@<source>@t=<time>`` of ``audit_table_summary``)."""
    found = rows[rows["quantity"].str.startswith("xi_ratio@population")]
    if not len(found):
        return []
    values = rows.set_index(["variant", "quantity"])["mean"]
    keys = [q.split("@")[1:] for q in dict.fromkeys(found["quantity"])]
    sources = list(dict.fromkeys(k[0] for k in keys))
    times = list(dict.fromkeys(k[1] for k in keys))
    header = ["variant", "resolution"] + [f"ξ1/ξ2 at {t}" for t in times] + [f"loss at {t}" for t in times]
    body = []
    for v in dict.fromkeys(found["variant"]):
        for src in sources:
            label = (
                "all nodes, the seed swap's uniforms"
                if src == AUDIT_SWAP
                else "all nodes"
                if "/" not in src
                else f"1/{src.split('/')[1]} of the nodes per variable"
            )
            cells = [
                number(values.get((v, f"{q}@{src}@{t}"), float("nan")))
                for q in ("xi_ratio", "reduced_loss")
                for t in times
            ]
            body.append([v, label] + cells)
    return [
        (
            "The resolution test: the population flow at all its nodes and at 1/2, 1/4, ... of them per variable,"
            " and at all its nodes with the seed swap's uniforms (to the weighted sample's end):"
        ),
        "",
        markdown_table(header, body),
        "",
    ]


def audit_page(summary: pd.DataFrame) -> str:
    """The audit's section of the headline table as a page of its own: every audit experiment's tables."""
    audits = summary[summary["kind"] == "audit"]
    if not len(audits):
        kinds = ", ".join(map(str, dict.fromkeys(summary["kind"])))
        raise ValueError(f"the headline table has no experiment of kind 'audit' (its kinds: {kinds or 'none'})")
    lines = ["# The audit of Lemma 12's invariant", ""]
    for name, rows in audits.groupby("experiment", sort=False):
        lines += [f"## {name}", ""] + audit_markdown(rows)
    return "\n".join(lines)


def values_markdown(rows: pd.DataFrame) -> list[str]:
    quantities = list(dict.fromkeys(rows["quantity"]))
    values = rows.set_index(["variant", "quantity"])["mean"]
    body = [
        [v] + [number(values.get((v, q), float("nan"))) for q in quantities] for v in dict.fromkeys(rows["variant"])
    ]
    return [markdown_table(["variant", *quantities], body), ""]


def to_markdown(summary: pd.DataFrame, renderers: dict[str, Callable[[pd.DataFrame], list[str]]]) -> str:
    """The headline table as Markdown, a section per experiment; ``renderers`` gives each kind's function
    (``onenn.plan.kinds``: ``train_markdown``, ``scaling_markdown``, ...)."""
    lines = ["# Headline table", ""]
    for name, rows in summary.groupby("experiment", sort=False):
        kind = rows["kind"].iloc[0]
        if kind not in renderers:
            raise ValueError(f"no Markdown renderer given for kind {kind!r} (experiment {name!r})")
        lines += [f"## {name} ({kind})", ""]
        lines += renderers[kind](rows)
    if set(provenance.KEYS) <= set(summary.columns) and len(summary):
        keys = [*provenance.KEYS, *(k for k in provenance.CODE_KEYS if k in summary.columns)]
        found = summary.iloc[0][keys].to_dict()
        for key in provenance.ACCELERATOR_KEYS:
            if key in summary.columns:
                found[key] = provenance.gpus_used(summary[key])
        made_with = provenance.describe(found)
        lines += ["## Software", "", f"This table was made with {made_with}.", ""]
    return "\n".join(lines)
