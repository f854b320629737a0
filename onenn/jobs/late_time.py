"""An audit experiment's late-time law (``results/readme/<experiment>_late_time.md``, docs/method.md §7.3): the
late flow of ``onenn.theory.reduced.late_time`` against the population flow where both apply, then alone far
beyond, to say where ``xi1/xi2`` goes."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from onenn.base.io import write_with
from onenn.jobs.inputs import ANY, NUMBER, load_checked_table

#: the comparison starts from the population flow's point at this time and runs to its end
COMPARE_FROM = 1e12
#: the largest relative difference between the two flows that counts as agreement (xi1, xi1/xi2, loss * xi1)
LATE_TOLERANCE = 1e-3
#: the late flow alone, from the population flow's end: the times (log10) it is recorded at
FAR_DECADES = (20.0, 30.0, 40.0, 60.0, 100.0, 200.0, 300.0, 1000.0, 3000.0)
#: the audit table's columns this job reads
COLUMNS = {"variant": ANY, "source": ANY, "time": NUMBER, "xi1": NUMBER, "xi2": NUMBER, "reduced_loss": NUMBER}
COLUMNS |= {"N": NUMBER, "d": NUMBER}


def comparison(main: pd.DataFrame, N: int, d: int) -> pd.DataFrame:
    """The late flow from the population flow's point at ``COMPARE_FROM``, at the population's recorded times
    from there on: ``xi1``, ``xi1/xi2`` and ``loss * xi1`` of both, and their relative differences."""
    from onenn.theory.reduced.late_time import late_flow

    part = main[main["time"] >= COMPARE_FROM].sort_values("time")
    start = part.iloc[0]
    late = late_flow(float(start["xi1"]), float(start["xi2"]), float(start["time"]), np.log10(part["time"]), N, d)
    out = pd.DataFrame(
        {
            "time": part["time"].to_numpy(),
            "xi1": part["xi1"].to_numpy(),
            "xi1_late": 10.0**late.log10_xi1,
            "xi_ratio": (part["xi1"] / part["xi2"]).to_numpy(),
            "xi_ratio_late": late.xi_ratio,
            "loss_xi1": (part["reduced_loss"] * part["xi1"]).to_numpy(),
            "loss_xi1_late": late.loss_xi1,
        }
    )
    for q in ("xi1", "xi_ratio", "loss_xi1"):
        out[f"{q}_change"] = np.abs(out[f"{q}_late"] / out[q] - 1.0)
    return out


def far(main: pd.DataFrame, N: int, d: int) -> pd.DataFrame:
    """The late flow from the population flow's end to ``10**FAR_DECADES[-1]``: ``xi1/xi2``, its distance to 1/2,
    the boundary and ``1 + r``, ``log10 xi1``, ``loss * xi1``, and ``xi1^3 (d + (1 - r)^2) / (3 C t)``, which the late-time law
    (docs/method.md §7.3) puts at 1."""
    from onenn.theory.reduced.late_time import asymptote, late_flow

    end = main.sort_values("time").iloc[-1]
    decades = [math.log10(float(end["time"]))] + [x for x in FAR_DECADES if x > math.log10(float(end["time"]))]
    late = late_flow(float(end["xi1"]), float(end["xi2"]), float(end["time"]), np.array(decades), N, d)
    C = asymptote(N, d)
    law = 3.0 * late.log10_xi1 - late.log10_time + np.log10((d + (1.0 - late.boundary) ** 2) / (3.0 * C))
    return pd.DataFrame(
        {
            "log10_time": late.log10_time,
            "xi_ratio": late.xi_ratio,
            "xi_ratio_minus_half": late.xi_ratio - 0.5,
            "boundary": late.boundary,
            "one_plus_boundary": late.one_plus_boundary,
            "log10_xi1": late.log10_xi1,
            "loss_xi1": late.loss_xi1,
            "law": 10.0**law,
        }
    )


def answer(far_rows: pd.DataFrame) -> str:
    """Where ``xi1/xi2`` goes, as far as the late flow shows: to 1/2 from above if it stays above 1/2, falls at
    every recorded time and ends within 10^-6 of it; otherwise not settled."""
    gap = far_rows["xi_ratio_minus_half"].to_numpy()
    last = f"ξ1/ξ2 − ½ = {gap[-1]:.3g} at t = 10^{far_rows['log10_time'].iloc[-1]:.0f}"
    if np.all(gap > 0) and np.all(np.diff(gap) < 0) and gap[-1] < 1e-6:
        return f"ξ1/ξ2 falls to 1/2 from above: it stays above 1/2 and falls at every recorded time ({last})."
    return f"Not settled by the late flow: {last}."


def late_time_job(table_path: str, configs: str, output: str, *, log: logging.Logger) -> None:
    """Write an audit experiment's late-time page: per variant, the two flows on ``COMPARE_FROM`` to the end with
    the verdict against ``LATE_TOLERANCE``, then the late flow alone to ``10**FAR_DECADES[-1]`` and the answer."""
    from onenn.analysis.markdown import markdown_table
    from onenn.theory.reduced.late_time import asymptote

    table = load_checked_table(table_path, COLUMNS)
    population = table[table["source"] == "population"]
    if not len(population):
        raise ValueError(f"{table_path} has no population flow (source 'population'): is it an audit table?")

    def g(x: float, digits: int = 7) -> str:
        return f"{x:.{digits}g}"

    N, d = int(population["N"].iloc[0]), int(population["d"].iloc[0])
    lines = [
        (
            f"> From the run of {configs}. Written by `snakemake results/readme/<experiment>_late_time.md` "
            "(workflow/rules/readme.smk): rerun it rather than edit this file."
        ),
        "",
        "# The audit's late-time law",
        "",
        (
            "The late flow (docs/method.md §7.3, `onenn/theory/reduced/late_time.py`) is the gradient flow of "
            "`C/ξ1 + ½F(r)^N`, `r = 1 − ξ2/ξ1`, with "
            f"C = {g(asymptote(N, d))} at d = {d}, N = {N}. From the population flow's point at t = "
            f"{COMPARE_FROM:.0e} both flows run to the population's end; relative differences, tolerance "
            f"{LATE_TOLERANCE:g}."
        ),
        "",
    ]
    far_parts = []
    for variant, main in population.groupby("variant", sort=True):
        end = float(main["time"].max())
        if end < COMPARE_FROM:
            # a short run (the quick preset): the law is a late-time one, and there is no late flow to hold it to
            lines += [
                f"## {variant}: the two flows",
                "",
                f"The population flow ends at t = {end:.3g}, before t = {COMPARE_FROM:.0e}: nothing to compare.",
                "",
            ]
            log.info("%s: the population flow ends at t=%g, before %g: no comparison", variant, end, COMPARE_FROM)
            continue
        comp = comparison(main, N, d)
        worst = {q: float(comp[f"{q}_change"].max()) for q in ("xi1", "xi_ratio", "loss_xi1")}
        ok = all(v <= LATE_TOLERANCE for v in worst.values())
        body = [
            [f"{r.time:.3g}", g(r.xi1), g(r.xi1_late), f"{r.xi1_change:.2g}", g(r.xi_ratio), g(r.xi_ratio_late)]
            + [f"{r.xi_ratio_change:.2g}", g(r.loss_xi1, 6), g(r.loss_xi1_late, 6), f"{r.loss_xi1_change:.2g}"]
            for r in comp.itertuples(index=False)
        ]
        header = ["t", "ξ1 (population)", "ξ1 (late)", "rel. diff", "ξ1/ξ2 (population)", "ξ1/ξ2 (late)"]
        header += ["rel. diff", "loss·ξ1 (population)", "loss·ξ1 (late)", "rel. diff"]
        worst_text = ", ".join(f"{q} {v:.2g}" for q, v in worst.items())
        lines += [f"## {variant}: the two flows", "", markdown_table(header, body), ""]
        lines += [f"Largest relative difference: {worst_text}: {'within' if ok else 'NOT within'} the tolerance.", ""]
        far_parts.append((variant, far(main, N, d)))
        log.info("%s: largest relative differences %s", variant, worst_text)
    lines += (
        []
        if not far_parts
        else [
            "## The late flow alone, from the population flow's end",
            "",
            (
                "`law` is `ξ1³ (d + (1 − r)²) / (3 C t)`, which the late-time law puts at 1 once the boundary follows "
                "its quasi-static value."
            ),
            "",
        ]
    )
    for variant, rows in far_parts:
        body = [
            [
                variant,
                f"1e{r.log10_time:.0f}",
                f"{r.xi_ratio:.10f}",
                f"{r.xi_ratio_minus_half:.3g}",
                f"{r.one_plus_boundary:.4g}",
            ]
            + [f"{r.log10_xi1:.4f}", g(r.loss_xi1), f"{r.law:.5f}"]
            for r in rows.itertuples(index=False)
        ]
        header = ["variant", "t", "ξ1/ξ2", "ξ1/ξ2 − ½", "1 + r", "log10 ξ1", "loss·ξ1", "law"]
        lines += [markdown_table(header, body), "", f"{variant}: {answer(rows)}", ""]
    write_with(output, lambda tmp: tmp.write_text("\n".join(lines), encoding="utf-8"))
    log.info("wrote %s", output)
