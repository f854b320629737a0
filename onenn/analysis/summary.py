"""The headline table: a tidy row per (experiment, variant, test set, quantity), each kind's by its summariser
(``train_summary``, ...), with the software that made it (``onenn.base.provenance``). docs/method.md §5, §7."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from onenn.analysis.tables import (
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
#: parameter diagnostics at the first and the last saved step
PARAMETERS = ("dist_family", "dist_family_active", "label_norm")


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
    """Summary rows of one training experiment's table."""
    by = ["experiment", "variant", "K"]
    final = final_step(table)
    parts = [
        _seed_rows(rows, by, metric, str(test_set))
        for test_set, rows in final.groupby("test_set", sort=True)
        for metric in FINAL_METRICS
    ]
    one_set = final[final["test_set"] == final["test_set"].iloc[0]]  # the minibatch loss is per run, not per set
    parts.append(_seed_rows(one_set, by, "minibatch_loss"))
    for value in PARAMETERS:
        ends = first_and_last(table, value)
        for end in ("start", "end") if value == "label_norm" else ("start", "end", "ratio"):
            valid = ends[ends[end].notna()]
            if len(valid):
                parts.append(_seed_rows(valid, by, f"{value}_{end}", column=end))
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


#: metrics of the binary experiment at the last saved step, per prompt set
BINARY_METRICS = (("train", "test_loss"), ("uniform", "nn_mse"), ("separated", "nn_mse"))
BINARY_PARAMETERS = ("dist_family_active", "xi1", "xi2")


def binary_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The binary experiment's final metrics and parameters, mean ± sd over seeds."""
    final = final_step(table)
    by = ["experiment", "variant"]
    parts = [
        _seed_rows(final[final["test_set"] == test_set], by, metric, test_set) for test_set, metric in BINARY_METRICS
    ]
    parts += [_seed_rows(final[final["test_set"] == "train"], by, value) for value in BINARY_PARAMETERS]
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


def full_matrix_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per variant: the largest distance of W to the family and to the reduced trajectory, and the final xi."""
    parts = []
    for variant, part in table.groupby("variant", sort=True):
        end = part.sort_values("step").iloc[-1]
        values = {f"{c}_max": part[c].max() for c in ("dist_family_active", "xi_gap")}
        values |= {f"{c}_end": end[c] for c in ("xi1", "xi1_reduced", "xi2", "xi2_reduced")}
        values |= {"steps": end["step"], "prompts": end["prompts"]}
        parts.append(_value_rows(str(end["experiment"]), variant, values))
    return pd.concat(parts, ignore_index=True).assign(kind="full_matrix")


def summarise(
    tables: dict[str, pd.DataFrame], summarisers: dict[str, Callable[[pd.DataFrame], pd.DataFrame]]
) -> pd.DataFrame:
    """The headline table of every experiment, in the order of ``tables``, by its kind's summariser."""
    parts, used = [], {}
    for name, table in tables.items():
        if name not in summarisers:
            raise ValueError(f"no summariser given for experiment {name!r}")
        found = set(table["experiment"].unique())
        if found != {name}:
            raise ValueError(f"the table given for experiment {name!r} holds experiments {sorted(found)}")
        parts.append(summarisers[name](table))
        used[name] = {
            key: provenance.gpus_used(table[key]) if key in table.columns else provenance.NO_GPU
            for key in provenance.ACCELERATOR_KEYS
        }
    out = pd.concat(parts, ignore_index=True).reindex(columns=list(COLUMNS))
    out["n"] = out["n"].astype("int64")
    # the software that made this table (provenance.KEYS), and the GPUs its experiments' runs were trained on
    out = out.assign(**provenance.versions())
    for key in provenance.ACCELERATOR_KEYS:
        out[key] = out["experiment"].map(lambda name, key=key: used[name][key])
    return normalise_types(out)
