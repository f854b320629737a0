"""The page and the figure of the convergence proof's inequalities along the audit's flow (docs/method.md §7.6),
read from ``onenn.theory.inequalities.inequalities_table``."""

import math
from collections.abc import Iterator

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from onenn.analysis.markdown import cell, markdown_table, number

#: the rows of a variant's main table: the rate inequalities (Lemmas 8 and 10 at their largest C_d), the Jensen step
RATE_STEPS = ("lemma8", "lemma9", "lemma10", "lemma10_step", "lemma11", "lemma7")
JENSEN_STEPS = ("jensen_population", "jensen_prompt")
LEMMA12_STEPS = ("lemma12", "lemma12_replaced", "lemma12_printed")
#: the sample's GD ends at this source's last time
GD = "gd"
MAIN, HALF = "population", "population/2"


def value(x: float) -> str:
    """A number (numpy's too) to four significant digits (``−∞``, ``∞``, ``–`` for NaN)."""
    x = float(x)
    return ("∞" if x > 0 else "−∞") if math.isinf(x) else number(x)


def point(row: pd.Series | None) -> str:
    return "–" if row is None else f"({value(row['xi1'])}, {value(row['xi2'])})"


def _trajectory(steps: pd.DataFrame, source: str, reading: str, name: str) -> pd.DataFrame:
    mine = steps[(steps["source"] == source) & (steps["inequality"] == name) & (steps["point"] == "trajectory")]
    return mine[mine["reading"] == reading].sort_values("time") if reading else mine.sort_values("time")


def worst(rows: pd.DataFrame) -> pd.Series | None:
    """The row of the smallest margin (the first of equal ones), None if there is none."""
    rows = rows[rows["margin"].notna()]
    return None if not len(rows) else rows.loc[rows["margin"].idxmin()]


def first_failure(rows: pd.DataFrame) -> pd.Series | None:
    failed = rows[rows["margin"] < 0]
    return None if not len(failed) else failed.iloc[0]


def largest_change(main: pd.DataFrame, half: pd.DataFrame, inside: bool) -> float:
    """The largest relative change of the left side (the rate) at half the nodes, at the same points."""
    a, b = (part.set_index("time")["left"] for part in (main, half))
    keep = main["inside"].to_numpy(dtype=bool) if inside else np.full(len(main), True)
    with np.errstate(divide="ignore", invalid="ignore"):
        change = ((b - a).abs() / a.abs())[keep]
    change = change[np.isfinite(change)]
    return float(change.max()) if len(change) else math.nan


def _readings(steps: pd.DataFrame, names: tuple) -> Iterator[tuple[str, str, pd.DataFrame, pd.DataFrame, pd.DataFrame]]:
    """(inequality, reading, its rows along the population flow, at half the nodes, along GD) per reading of ``names``."""
    for name in names:
        for reading in sorted(steps.loc[steps["inequality"] == name, "reading"].unique()):
            rows = _trajectory(steps, MAIN, reading, name)
            if len(rows):
                half, gd = _trajectory(steps, HALF, reading, name), _trajectory(steps, GD, reading, name)
                yield name, reading, rows, half, gd


def _main_rows(steps: pd.DataFrame) -> list[list[str]]:
    body = []
    for name, reading, rows, half, gd in _readings(steps, RATE_STEPS + JENSEN_STEPS):
        low, fail, inner = worst(rows), first_failure(rows), worst(rows[rows["inside"]])
        at_half = half[half["time"] == low["time"]]["margin"] if len(half) else pd.Series(dtype=float)
        if name in JENSEN_STEPS:
            resolution = f"share failing: {'–' if fail is None else value(fail['fail_share'])}"
        else:
            resolution = " / ".join(value(largest_change(rows, half, inside)) for inside in (True, False))
        gd_fail = first_failure(gd)
        at_worst = [value(low["margin"]), value(low["time"]), point(low)]
        failing = ["never" if fail is None else value(fail["time"]), point(fail)]
        failing += ["–" if fail is None else ("yes" if bool(fail["inside"]) else "no")]
        region = ["–" if inner is None else value(inner["margin"])]
        halves = [value(at_half.iloc[0]) if len(at_half) else "–", resolution]
        gd_worst = "–" if not len(gd) else value(worst(gd)["margin"])
        gd_first = "–" if not len(gd) else ("never" if gd_fail is None else value(gd_fail["time"]))
        body.append([cell(rows["label"].iloc[0]), reading, *at_worst, *failing, *region, *halves, gd_worst, gd_first])
    return body


MAIN_HEADER = ["inequality", "reading", "worst margin", "at t", "(ξ1, ξ2) there"]
MAIN_HEADER += ["first recorded t it fails", "(ξ1, ξ2) there", "in the proof's region?", "worst margin in the region"]
MAIN_HEADER += [
    "worst margin at half the nodes",
    "rate's largest change at half the nodes (region / all) · Jensen: share of prompts failing at its first failure",
]
MAIN_HEADER += ["GD (t ≤ 1000): worst margin", "GD: first t it fails"]


def _c_d_rows(steps: pd.DataFrame) -> list[list[str]]:
    body = []
    for name, reading, rows, half, gd in _readings(steps, ("lemma8", "lemma10")):
        bind = rows.loc[rows["c_d_bound"].idxmin()]
        # the smallest bound in the region, at half the nodes, along GD ("–" where there is none: NaN)
        smallest = [value(part["c_d_bound"].min()) for part in (rows[rows["inside"]], half, gd)]
        where = [value(bind["c_d_bound"]), value(bind["time"]), point(bind)]
        body.append([name.replace("lemma", "Lemma "), reading, *where, *smallest])
    return body


C_D_HEADER = ["lemma", "reading", "largest C_d, whole flow", "binding at t", "(ξ1, ξ2) there"]
C_D_HEADER += ["largest C_d in the region", "at half the nodes", "GD (t ≤ 1000)"]


#: the points of Lemma 12's table: (source, point, header)
LEMMA12_POINTS = (
    (MAIN, "crossing", "flow's crossing of 7/15"),
    (GD, "crossing", "GD's crossing"),
    (MAIN, "start", "(7σ/15, σ)"),
)


def _lemma12_rows(steps: pd.DataFrame) -> list[list[str]]:
    body = []
    for name in LEMMA12_STEPS:
        mine = steps[(steps["inequality"] == name) & (steps["point"] != "trajectory")]
        cells = [cell(mine["label"].iloc[0]) if len(mine) else name]
        for source, where, _ in LEMMA12_POINTS:
            row = mine[(mine["source"] == source) & (mine["point"] == where)]
            if not len(row):
                cells += ["–", "–"]
                continue
            r = row.iloc[0]
            cells += [f"{point(r)}, t = {value(r['time'])}" if where == "crossing" else point(r)]
            cells += [f"{value(r['margin'])} ({'holds' if r['margin'] > 0 else 'fails'})"]
        body.append(cells)
    return body


LEMMA12_HEADER = ["condition"] + [h for *_, header in LEMMA12_POINTS for h in (header, "margin there")]


def first_in_region(steps: pd.DataFrame) -> tuple[str, float] | None:
    """The inequality (label) that fails first, in time, inside the proof's region along the population flow
    (reading ``L`` for the rates; Lemmas 8 and 10 hold by their C_d), and when."""
    found = []
    for order, name in enumerate(("lemma9", "lemma10_step", "lemma11", "lemma7", *JENSEN_STEPS)):
        rows = _trajectory(steps, MAIN, "L" if name not in JENSEN_STEPS else "", name)
        fail = first_failure(rows[rows["inside"]])
        if fail is not None:
            found.append((float(fail["time"]), order, str(fail["label"])))
    return None if not found else (min(found)[2], min(found)[0])


def headline(variant: str, steps: pd.DataFrame) -> str:
    """A variant's answer: where its flow crosses 7/15 and which inequality fails first before it."""
    cross = steps[(steps["source"] == MAIN) & (steps["point"] == "crossing")]
    t_cross = value(cross["time"].iloc[0]) if len(cross) else "never"
    first = first_in_region(steps)
    before = "no inequality fails before it" if first is None else f"the first to fail before it: {first[0]}"
    at = "" if first is None else f", at t = {value(first[1])}"
    return f"{variant} (σ = {value(steps['sigma'].iloc[0])}): the flow crosses 7/15 at t = {t_cross}; {before}{at}."


def _jensen_shares(steps: pd.DataFrame) -> list[list[str]]:
    """The share of prompts failing the Jensen step, both readings, at the flow's t = 0 and its powers of ten."""
    rows = {n: _trajectory(steps, MAIN, "", n).drop_duplicates("time").set_index("time") for n in JENSEN_STEPS}
    times = rows[JENSEN_STEPS[0]].index.to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore"):
        decade = np.log10(times)
    body = []
    for t in times[(times == 0) | np.isclose(decade, np.round(decade), rtol=0.0, atol=1e-9)]:
        r = rows[JENSEN_STEPS[0]].loc[t]
        shares = [value(rows[n].loc[t, "fail_share"]) for n in JENSEN_STEPS]
        body.append([value(t), value(r["xi1"]), value(r["xi1"] / r["xi2"]), *shares])
    return body


JENSEN_HEADER = ["t", "ξ1", "ξ1/ξ2", "share failing, E[s] = 1", "share failing, E[s] = the prompt's mean s̄"]


def variant_section(variant: str, steps: pd.DataFrame) -> list[str]:
    return [
        f"## {variant} (σ = {value(steps['sigma'].iloc[0])})",
        "",
        (
            "The Jensen step's expectations (E[s] = 1) fail exactly where ξ1 > "
            f"{value(steps['jensen_threshold'].iloc[0])} (docs/method.md §7.6), whatever σ; the table's "
            "times are the flow's recorded ones, the first failure lies between the one given and the one before."
        ),
        "",
        markdown_table(MAIN_HEADER, _main_rows(steps)),
        "",
        (
            "The share of prompts failing the Jensen step along the flow, at its recorded powers of ten (at ξ1 = 0 "
            "the reading E[s] = 1 fails on the prompts whose mean inner product is negative, half of them by "
            "symmetry, and the prompt's reading is an equality):"
        ),
        "",
        markdown_table(JENSEN_HEADER, _jensen_shares(steps)),
        "",
        "The largest C_d for which Lemmas 8 and 10 hold (the rows above evaluate them there):",
        "",
        markdown_table(C_D_HEADER, _c_d_rows(steps)),
        "",
        "Lemma 12's condition where ξ1 = (7/15)·ξ2 is reached, and at (7σ/15, σ), where it would be reached first:",
        "",
        markdown_table(LEMMA12_HEADER, _lemma12_rows(steps)),
        "",
        (
            "On the line ξ1 = (7/15)·ξ2 the condition from Lemma 9 and the one with the first term (2N/d)·e^{−ξ1/2} "
            "hold nowhere (docs/method.md §7.6); the printed form holds exactly where ξ2 > 6·log(2N⁴e/a) = "
            f"{value(steps['printed_threshold'].iloc[0])}, against Lemma 12's threshold on σ, "
            f"3·log(2N⁴d/a) = {value(steps['lemma12_threshold'].iloc[0])}."
        ),
        "",
    ]


def page(steps: pd.DataFrame, figure_file: str = "") -> str:
    """The page: its answer, per variant, and its figure (``figure_file``, beside the page), what the rows mean, then
    one section per variant (in increasing σ)."""
    order = steps.groupby("variant")["sigma"].first().sort_values()
    answers = [f"- {headline(v, steps[steps['variant'] == v])}" for v in order.index]
    drawn = f"![the inequalities' two sides along the flow of {figure_variant(steps)}]({figure_file})"
    lines = [
        "# The convergence proof's inequalities along the audit's flow",
        "",
        (
            "What breaks the invariant's proof is Lemma 12's deduction: on the line ξ1 = (7/15)·ξ2 its condition "
            "(Lemma 9's right side negative) reads (16/7 − 4/(N+1)²)·ξ1 < log(a/(2N⁴e)) < 0, so it holds at no point "
            "of the line with ξ1 ≥ 0, whatever σ (docs/audit.md); the rows below evaluate it where the flow crosses."
        ),
        "",
        *answers,
        "",
        *([drawn, ""] if figure_file else []),
        (
            "Each inequality of the binary paper's convergence proof (Lemmas 7–12, the review's Jensen step in "
            "Lemma 9's proof, Eq. C.18) at every recorded point of the population flow, its rate ξ̇ from the "
            "population quadrature at the audit's nodes (docs/method.md §7.6 for the readings). Margin: the slack "
            "over |left side|, positive where the inequality holds. Reading L, the text's: ξ̇ of the loss with the "
            "½ (the binary loss the multiclass paper recalls has it, and A.1's closed form of ξ2's step is −∂L/∂ξ2 "
            "of it); 2L, a sensitivity check: of the loss without the ½. The proof's region: before the flow first "
            "crosses ξ1/ξ2 = 7/15. 'At half the nodes': the same points, the rate from the quadrature at half its "
            "nodes in each variable. GD: exact gradient descent on the weighted sample (t ≤ 1000), its rate its own "
            "step over η. Lemmas 8 and 10 are evaluated at the largest C_d for which they hold along the whole flow: "
            "they hold there by construction and are not tests (the text gives C_d no value); Lemma 10's step from "
            "Lemma 8, ξ̇2 ≤ e^{2ξ1−2ξ2}, is a test. Not evaluated: Lemma 6 (its c1–c4 and poly(N, d) have no value "
            "in the text) and Lemma 7's lower bound; Lemma 7 is the multiclass numbering (the binary paper's Lemma "
            "5), tested in A.5's instance (c2′ = 1, poly = 1/15)."
        ),
        "",
    ]
    for variant in order.index:
        lines += variant_section(variant, steps[steps["variant"] == variant])
    return "\n".join(lines)


# --- the figure ------------------------------------------------------------------------------------------------

FIGURE_STEPS = ("lemma8", "lemma9", "lemma10", "lemma11", "lemma7", "lemma12", *JENSEN_STEPS)


def figure_variant(steps: pd.DataFrame) -> str:
    """The variant the figure draws: the one at Lemma 12's threshold (``sigma_rule: lemma12``), else the largest σ."""
    rules = steps.groupby("variant")["sigma_rule"].first()
    at_rule = rules[rules == "lemma12"]
    return str(at_rule.index[0] if len(at_rule) else steps.groupby("variant")["sigma"].first().idxmax())


def _side(ax: plt.Axes, time: np.ndarray, side: np.ndarray, colour: str, ls: str, label: str) -> None:
    """A side on a log axis: its positive part as it is, its negative part as |side| dotted."""
    negative = np.where(side < 0, -side, np.nan)
    ax.plot(time, np.where(side > 0, side, np.nan), color=colour, ls=ls, label=label)
    if np.isfinite(negative).any():
        ax.plot(time, negative, color=colour, ls=":", label=f"−({label}), where negative")


def _limits(left: np.ndarray, right: np.ndarray) -> tuple[float, float]:
    """The y range of a panel: from a thousandth of the smallest |left| to a million times the largest (a right
    side that falls to e^-hundreds or grows to e^hundreds leaves the panel rather than squash it)."""
    sizes = np.abs(left[np.isfinite(left) & (left != 0)])
    if not sizes.size:
        sizes = np.abs(right[np.isfinite(right) & (right != 0)])
    if not sizes.size:
        return 1e-3, 1.0
    return max(float(sizes.min()) / 1e3, 1e-300), min(float(sizes.max()) * 1e6, 1e300)


def figure(steps: pd.DataFrame, width: float = 10.0, height: float = 4.0) -> plt.Figure:
    """Each inequality's two sides along the population flow of ``figure_variant`` (reading L), against t: left
    side solid, right side dashed, shaded where it fails, the crossing of 7/15 a vertical line."""
    variant = figure_variant(steps)
    mine = steps[steps["variant"] == variant]
    sigma = float(mine["sigma"].iloc[0])
    cross = mine[(mine["source"] == MAIN) & (mine["point"] == "crossing")]
    fig, axes = plt.subplots(4, 2, figsize=(width, 4 * height))
    for ax, name in zip(axes.ravel(), FIGURE_STEPS, strict=True):
        rows = _trajectory(mine, MAIN, "" if name in JENSEN_STEPS or name == "lemma12" else "L", name)
        rows = rows[rows["time"] > 0]
        time, left, right = (rows[c].to_numpy(dtype=np.float64) for c in ("time", "left", "right"))
        _side(ax, time, left, "C0", "-", "left")
        _side(ax, time, right, "C3", "--", "right")
        fails = (rows["margin"] < 0).to_numpy()
        if fails.any():
            ax.fill_between(time, 0, 1, where=fails, color="red", alpha=0.1, transform=ax.get_xaxis_transform())
        if len(cross):
            ax.axvline(float(cross["time"].iloc[0]), color="black", lw=0.8, ls="-.")
        ax.set(xscale="log", yscale="log", xlabel="time t")
        ax.set_ylim(*_limits(left, right))
        ax.set_title(str(rows["label"].iloc[0]) if len(rows) else name, fontsize="small")
        ax.legend(fontsize="x-small")
    fig.suptitle(f"{variant} (σ = {sigma:.4g}): left (solid) and right (dashed) sides; red: fails; dash-dot: 7/15")
    return fig
