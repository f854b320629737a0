"""Tables: one tidy row per (experiment, variant, seed, step, test set), every statistic over seeds, and the audit's
numbers (docs/method.md §7). No torch: the figures and pages only draw and write these."""

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from onenn.base.columns import ID_COLUMNS, normalise_types
from onenn.maths.family import XI_RATIO_BOUND, crossing

#: what the columns ``run_table`` adds to a run's metrics mean (besides the run's identity and its record)
RUN_TABLE_DESCRIPTIONS = {
    "minibatch_loss": "mean minibatch loss of the SGD steps since the previous saved step (at step 0: the first)",
}


def run_table(
    metrics: pd.DataFrame, run_info: dict[str, Any], minibatch_loss: np.ndarray, saved_steps: np.ndarray
) -> pd.DataFrame:
    """One run's metrics with its identity, its resolved settings and its minibatch loss: per saved step ``s_k`` the
    mean of the steps ``[s_{k−1}, s_k)`` (at step 0 the first one's)."""
    table = metrics.copy()
    starts = [0, *map(int, saved_steps[:-1])]
    means = [minibatch_loss[lo : max(int(step), lo + 1)].mean() for lo, step in zip(starts, saved_steps)]
    table["minibatch_loss"] = table["step"].map(dict(zip(saved_steps.tolist(), means))).astype("float64")
    table = table.assign(**{key: value for key, value in run_info.items() if key not in table})
    first = [c for c in ID_COLUMNS if c in table]
    table = table[first + [c for c in table.columns if c not in first]]
    return normalise_types(table)


def concat_tables(tables: Iterable[pd.DataFrame]) -> pd.DataFrame:
    table = pd.concat(list(tables), ignore_index=True)
    keys = [c for c in ID_COLUMNS if c in table]
    return normalise_types(table.sort_values(keys, kind="stable").reset_index(drop=True))


def seed_stats(table: pd.DataFrame, by: Sequence[str], value: str, band_sd: float = 2.0) -> pd.DataFrame:
    """Mean, sample sd (0 for a single seed), n, and the band ``mean ± band_sd·sd`` of ``value`` over seeds."""
    grouped = table.groupby(list(by), sort=True, observed=True)[value]
    stats = grouped.agg(mean="mean", sd="std", n="count").reset_index()
    stats["sd"] = stats["sd"].fillna(0.0)
    stats["lower"] = stats["mean"] - band_sd * stats["sd"]
    stats["upper"] = stats["mean"] + band_sd * stats["sd"]
    return stats


def final_step(table: pd.DataFrame) -> pd.DataFrame:
    """Rows at the last saved step of each run."""
    last = table.groupby(["experiment", "variant", "seed"])["step"].transform("max")
    return table[table["step"] == last]


def first_and_last(table: pd.DataFrame, value: str) -> pd.DataFrame:
    """Per run: ``value`` at its first and last saved step and ``end / start`` (NaN where the start is 0)."""
    runs = ["experiment", "variant", "seed"]
    one_set = table[table["test_set"] == table["test_set"].iloc[0]] if "test_set" in table else table
    ordered = one_set.sort_values(runs + ["step"], kind="stable")
    grouped = ordered.groupby(runs, sort=True)
    out = grouped.first().reset_index()  # settings and identity from the first row
    out["start"] = grouped[value].first().to_numpy()
    out["end"] = grouped[value].last().to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = np.where(out["start"] > 0, out["end"] / out["start"], np.nan)
    return out


#: settings that may tell the variants of an experiment apart, in the order they sort them
ORDER_KEYS = ("K", "N", "d", "epsilon", "noise_blocks", "loss", "c", "sigma", "lr", "batch", "steps", "delta")


def variant_order(table: pd.DataFrame, by: Sequence[str] = ORDER_KEYS) -> list[str]:
    """The variants sorted by the settings of ``by`` that vary between them (numbers as numbers: ``K=2`` before
    ``K=10``)."""
    per_variant = table.groupby("variant", sort=True).first()
    keys = [k for k in by if k in per_variant and per_variant[k].nunique() > 1]
    return list(per_variant.sort_values(keys, kind="stable").index) if keys else list(per_variant.index)


AUDIT_MAIN = "population"
#: times of the resolution table: the early flow (10 ... 1e6, where xi1/xi2 crosses 7/15 and the weighted sample
#: is valid) and the late one
RESOLUTION_TIMES = (1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e12, 1e16, 1e20)
#: the resolution table's values
RESOLVED = ("xi_ratio", "reduced_loss")
#: the population flow at all the nodes with the seed swap's uniforms (``onenn.theory.audit.POPULATION_SWAP``)
AUDIT_SWAP = "population_swap"


def audit_trajectory(table: pd.DataFrame) -> pd.DataFrame:
    """The main trajectory of every audit variant: the population flow at the finest resolution."""
    main = table[table["source"] == AUDIT_MAIN]
    return main.sort_values(["variant", "time"], kind="stable").reset_index(drop=True)


def _population_levels(mine: pd.DataFrame) -> list[str]:
    """The population sources of one variant, finest first (``population``, ``population/2``, ...)."""
    names = [s for s in dict.fromkeys(mine["source"]) if s == AUDIT_MAIN or s.startswith(AUDIT_MAIN + "/")]
    return sorted(names, key=lambda s: 1 if s == AUDIT_MAIN else int(s.split("/")[1]))


def _recorded(part: pd.DataFrame, t: float, values: Sequence[str]) -> dict[str, float]:
    """``values`` of one flow at its recorded time ``t``; NaN where it has none (a printed value is computed at its
    time, never interpolated: the audit records the times the pages print)."""
    hit = part[np.isclose(part["time"].to_numpy(), t, rtol=1e-12, atol=0.0)]
    return {v: float(hit[v].iloc[0]) if len(hit) else math.nan for v in values}


def _both(a: pd.DataFrame, b: pd.DataFrame, value: str) -> tuple[np.ndarray, np.ndarray]:
    """``value`` of two trajectories at the times both recorded (no interpolation)."""
    both = a.drop_duplicates("time").merge(b.drop_duplicates("time"), on="time", suffixes=("", "_b"))
    return both[value].to_numpy(), both[f"{value}_b"].to_numpy()


def audit_resolution(table: pd.DataFrame, times: Sequence[float] = RESOLUTION_TIMES) -> pd.DataFrame:
    """The resolution test: ``xi1/xi2`` and the loss of every population level and of the seed swap at ``times``, with
    their relative change to the next finer level (the swap: to the main flow)."""
    rows = []
    for variant, mine in table.groupby("variant", sort=True):
        for source in _population_levels(mine) + ([AUDIT_SWAP] if (mine["source"] == AUDIT_SWAP).any() else []):
            part = mine[(mine["source"] == source) & (mine["time"] > 0)].sort_values("time")
            nodes = 1 if source in (AUDIT_MAIN, AUDIT_SWAP) else int(source.split("/")[1])
            for t in times:  # NaN where the flow has no record at t
                values = _recorded(part, t, RESOLVED)
                rows.append({"variant": variant, "source": source, "nodes_divisor": nodes, "time": float(t), **values})
    out = pd.DataFrame(rows)
    if not len(out):
        return out
    out["swap"] = out["source"] == AUDIT_SWAP
    out = out.sort_values(["variant", "time", "swap", "nodes_divisor"], kind="stable")
    finer = out[~out["swap"]].groupby(["variant", "time"])[list(RESOLVED)].shift(1).reindex(out.index)
    main = out[out["source"] == AUDIT_MAIN].set_index(["variant", "time"])
    main = main.reindex(pd.MultiIndex.from_frame(out[["variant", "time"]])).set_axis(out.index)
    for q in RESOLVED:
        reference = finer[q].where(~out["swap"], main[q])
        out[f"{q}_change"] = (reference - out[q]).abs() / out[q]
    return normalise_types(out.drop(columns="swap").reset_index(drop=True))


def crossing_time(part: pd.DataFrame, bound: float = XI_RATIO_BOUND) -> float:
    """The first time ``xi1/xi2`` exceeds ``bound`` on one flow (``onenn.maths.family.crossing``; NaN if never)."""
    part = part[part["time"] > 0].sort_values("time")
    return crossing(part["time"], part["xi1"], part["xi2"], bound)[0]


def significant_digits(value: float, error: float, most: int = 6) -> int:
    """The significant digits of ``value`` its ``error`` allows (to the error's first digit), in ``[1, most]``."""
    if not np.isfinite(value) or value == 0 or not np.isfinite(error):
        return 1
    if error <= 0:
        return most
    digits = math.floor(math.log10(abs(value))) - math.floor(math.log10(error)) + 1
    return int(min(max(digits, 1), most))


#: the audit table's columns whose value at the end ``audit_summary`` gives as ``{column}_end``
END_COLUMNS = ("time", "xi1", "xi2", "xi_ratio", "xi2_minus_xi1", "reduced_loss", "reduced_loss_se", "boundary")
END_COLUMNS += ("stuck_mass",)
#: the late-time check's columns of ``audit_summary``, from the audit table's columns at the end (NaN without them)
LATE_COLUMNS = {"loss_xi1_end": "loss_xi1", "asymptote": "asymptote", "stuck_loss_xi1_end": "stuck_loss_xi1"}


def audit_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per audit variant (sigma): the numbers behind the verdict (docs/method.md §7)."""
    rows = []
    for variant, part in audit_trajectory(table).groupby("variant", sort=True):  # each in time order
        end = part.iloc[-1]
        late = part[part["time"] >= 10.0]
        mine = table[table["variant"] == variant]
        gd = mine[mine["source"] == "gd"].sort_values("time")
        flow = mine[mine["source"] == "flow"].sort_values("time")
        gap = max(np.max(np.abs(gd[c].to_numpy() - flow[c].to_numpy())) for c in ("xi1", "xi2"))
        levels = _population_levels(mine)
        if len(levels) > 1:
            half = mine[mine["source"] == levels[1]]
            res_ratio_gap = float(np.max(np.abs(np.subtract(*_both(half, part, "xi_ratio")))))
            res_loss_gap = float(np.max(np.abs(np.divide(*_both(half, part, "reduced_loss")) - 1.0)))
        else:
            res_ratio_gap = res_loss_gap = np.nan
        sample = pd.concat([gd, mine[mine["source"] == "continuation"]]).sort_values("time")
        sample = sample[sample["time"] > 0]
        on_sample = part[(part["time"] > 0) & (part["time"] <= sample["time"].max())]
        sample_gap = np.max(np.abs(np.subtract(*_both(sample, on_sample, "xi_ratio"))))
        plain = mine[mine["source"] == "plain"].sort_values("time")
        cross = crossing_time(mine[mine["source"] == AUDIT_MAIN])  # error: largest change, half nodes or seed swap
        others = [crossing_time(mine[mine["source"] == s]) for s in levels[1:2] + [AUDIT_SWAP]]
        cross_error = max((abs(c - cross) for c in others if np.isfinite(c)), default=np.nan)
        res = audit_resolution(mine)  # the largest relative changes of xi1/xi2 and the loss under the seed swap
        swap = res[res["source"] == AUDIT_SWAP]  # NaN beyond the swap's end, none without one: max gives NaN or skips
        row = {"experiment": end["experiment"], "variant": variant} | {k: end[k] for k in ("sigma_rule", "sigma")}
        row |= {f"{c}_end": end[c] for c in END_COLUMNS} | {k: end.get(c, np.nan) for k, c in LATE_COLUMNS.items()}
        row |= {
            "xi_ratio_max": part["xi_ratio"].max(),
            "xi_ratio_bound": XI_RATIO_BOUND,
            "time_cross": cross if (part["xi_ratio"] > XI_RATIO_BOUND).any() else np.nan,
            "time_cross_error": cross_error,
            "time_cross_digits": significant_digits(cross, cross_error),
            "loss_log_time_first": float(late["loss_log_time"].iloc[0]) if len(late) else np.nan,
            "loss_log_time_end": end["loss_log_time"],
            "gd_steps": int(gd["step"].max()),
            "gd_flow_gap": float(gap),
            "resolution_xi_ratio_gap": res_ratio_gap,
            "resolution_reduced_loss_rel_gap": res_loss_gap,
            "sample_xi_ratio_gap": float(sample_gap),
            "plain_xi_ratio_end": float(plain["xi_ratio"].iloc[-1]) if len(plain) else np.nan,
            "swap_xi_ratio_rel_gap": swap["xi_ratio_change"].max(),
            "swap_reduced_loss_rel_gap": swap["reduced_loss_change"].max(),
        }
        rows.append(row)
    return normalise_types(pd.DataFrame(rows))


def audit_at_times(table: pd.DataFrame, times: Sequence[float]) -> pd.DataFrame:
    """The main trajectory of every variant at ``times`` (the headline table's values), as recorded there."""
    rows, values = [], ("xi1", "xi2", "xi_ratio", "xi2_minus_xi1", "boundary", "reduced_loss", "stuck_mass")
    for variant, part in audit_trajectory(table).groupby("variant", sort=True):
        part = part[part["time"] > 0]
        for t in times:
            if part["time"].min() <= t <= part["time"].max():
                row = {"variant": variant, "sigma_rule": part["sigma_rule"].iloc[0], "time": float(t)}
                rows.append(row | _recorded(part, t, values))
    return normalise_types(pd.DataFrame(rows))
