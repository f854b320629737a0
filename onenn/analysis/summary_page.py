"""The headline table's Markdown: one renderer per kind (``onenn.plan.kinds``: ``train_markdown``, ...) and the
page (``to_markdown``), with the audit's section as a page of its own (``audit_page``). No torch."""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from onenn.analysis.markdown import markdown_table, number
from onenn.analysis.summary import AUDIT_TIMES
from onenn.analysis.tables import AUDIT_SWAP
from onenn.base import provenance
from onenn.maths.family import XI_RATIO_BOUND


def titled_table(title: str, header: list[str], body: list[list[str]]) -> list[str]:
    return [title, "", markdown_table(header, body), ""]


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


def seeds_markdown(rows: pd.DataFrame, title: str, columns: tuple) -> list[str]:
    """``title``, then a table of ``mean ± sd`` per variant: ``columns`` are (header, quantity, test set)."""
    body = []
    for variant, part in rows.groupby("variant", sort=False):
        cells = [_lookup(part, q, t) for _, q, t in columns]
        n = int(cells[0]["n"]) if cells[0] is not None else 0
        cells = ["–" if c is None or pd.isna(c["mean"]) else f"{c['mean']:.4g} ± {c['sd']:.2g}" for c in cells]
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
    columns = (
        ("training loss", "test_loss", "train"),
        ("MSE to 1-NN, uniform", "nn_mse", "uniform"),
        ("MSE to 1-NN, separated", "nn_mse", "separated"),
        ("distance to family", "dist_family_active", None),
        ("ξ1", "xi1", None),
        ("ξ2", "xi2", None),
    )
    return seeds_markdown(rows, "At the last step (mean ± sd over n seeds):", columns)


#: (header, quantity) of the audit's table
AUDIT_COLUMNS = (
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
#: (name, quantity) of the main trajectory's rows at ``AUDIT_TIMES``
AT_TIMES = (
    ("loss", "reduced_loss"),
    ("ξ1/ξ2", "xi_ratio"),
    ("ξ1", "xi1"),
    ("r", "boundary"),
    ("mass beyond r", "stuck_mass"),
)


def _value(values: pd.Series, variant: str, quantity: str) -> str:
    """A cell of ``values``; the crossing time to the digits its error allows, with the error."""
    value = values.get((variant, quantity), math.nan)
    digits = values.get((variant, "time_cross_digits"), math.nan)
    if quantity != "time_cross" or math.isnan(value) or math.isnan(digits):
        return number(value)
    return f"{value:.{int(digits)}g} (± {values.get((variant, 'time_cross_error'), math.nan):.1g})"


def audit_markdown(rows: pd.DataFrame) -> list[str]:
    values = rows.set_index(["variant", "quantity"])["mean"]
    variants = list(dict.fromkeys(rows["variant"]))
    body = [[v] + [_value(values, v, q) for _, q in AUDIT_COLUMNS] for v in variants]
    header = ["variant"] + [h for h, _ in AUDIT_COLUMNS]
    times = [f"{t:.0e}" for t in AUDIT_TIMES]
    loss_body = [[v, name] + [_value(values, v, f"{q}@t={t}") for t in times] for v in variants for name, q in AT_TIMES]
    times_header = ["variant", "value"] + [f"t={t}" for t in times]
    return (
        titled_table(f"Lemma 12's invariant is ξ1/ξ2 ≤ 7/15 = {XI_RATIO_BOUND:.4f}:", header, body)
        + titled_table("The main trajectory (the population flow) at log-spaced times t:", times_header, loss_body)
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
            cells = [_value(values, v, f"{q}@{src}@{t}") for q in ("xi_ratio", "reduced_loss") for t in times]
            body.append([v, label] + cells)
    title = (
        "The resolution test: the population flow at all its nodes and at 1/2, 1/4, ... of them per variable,"
        " and at all its nodes with the seed swap's uniforms (to the weighted sample's end):"
    )
    return titled_table(title, header, body)


def audit_page(summary: pd.DataFrame) -> str:
    """The audit's section of the headline table as a page of its own."""
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
    body = [[v] + [_value(values, v, q) for q in quantities] for v in dict.fromkeys(rows["variant"])]
    return [markdown_table(["variant", *quantities], body), ""]


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
