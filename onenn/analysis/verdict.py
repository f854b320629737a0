"""The scorecard's verdict rule, section by section as docs/claims.md states it: the checks (``JUDGES``, ``judge``),
the error budget, shared test sets (``chi_square``), the assumed test size, chance (``expected_by_chance``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import gammaincinv
from scipy.stats import binom

from onenn.analysis.markdown import number
from onenn.base.claim import Claim

if TYPE_CHECKING:
    import pandas as pd

#: the probability mass of a normal within two standard deviations: |z| ≤ 2 for one point
LEVEL = math.erf(math.sqrt(2.0))
VERDICTS = ("agrees", "agrees in direction", "differs", "not run")
#: the level tests: a true claim fails one with probability 1 − LEVEL where our value has a spread (the other
#: checks' chance is not 1 − LEVEL: docs/claims.md, How many failures chance alone gives)
CHANCE_CHECKS = ("equal", "constant")
SLOPE_CHECKS = ("flat", "rising", "falling")
#: a "differs" whose χ² is within the limit at three standard deviations (99.73%) reads "marginal"
MARGINAL_LEVEL = math.erf(3.0 / math.sqrt(2.0))


# --- the verdict rule: one function per check ---------------------------------------------------------------------


def chi2_limit(dof: int, level: float = LEVEL) -> float:
    """The ``level`` quantile of χ² with ``dof`` degrees of freedom (4 for one at ``LEVEL``, 9 at ``MARGINAL_LEVEL``)."""
    return float(2.0 * gammaincinv(dof / 2.0, level))


@dataclass
class Measured:
    """Our value at one point: mean and sd over seeds (kind scaling: the estimate and its standard error, n prompts)."""

    label: str
    mean: float
    sd: float
    n: int
    test_se: float = 0.0  # the sampling error of our value from the test set (a level measured on it)
    paper: float | None = None  # the paper's value (or the bound), where the check has one
    spread: float = 0.0  # the paper's ±
    baseline: float | None = None
    series: tuple[float, ...] = ()  # check decays: the mean at step 0, then over the run's last decade of steps
    group: Any = None  # check constant: the value of the claim's ``by`` column
    z: float = math.nan
    paper_se: float = 0.0  # the sampling error of the paper's value at the test size assumed for it
    test_key: tuple | None = None  # which test set the value is measured on (points on one share its error)
    level: float = math.nan  # the slope checks: the mean at the last step (the slope is ``mean``)


def ratio(difference: float, spread: float) -> float:
    """``difference / spread``; with no spread, 0 for no difference and ±inf otherwise."""
    if spread > 0:
        return difference / spread
    return 0.0 if difference == 0 else math.copysign(math.inf, difference)


def judge_equal(points: list[Measured], claim: Claim) -> dict[str, Any]:
    spreads = [combined_spread(m, claim.resolution) for m in points]
    for m, s in zip(points, spreads):
        m.z = ratio(m.mean - m.paper, s)
    statistic = chi_square(points, claim.resolution)
    limit = chi2_limit(len(points))
    beyond = all(
        m.baseline is not None and np.sign(m.paper - m.baseline) * ratio(m.mean - m.baseline, s) > 2.0
        for m, s in zip(points, spreads)
    )
    verdict = "agrees" if statistic <= limit else "agrees in direction" if beyond else "differs"
    reading = ""
    if verdict == "agrees in direction":  # what held, then what failed (docs/claims.md)
        side = "above" if points[0].paper > points[0].baseline else "below"
        reading = f"{side} {', '.join(dict.fromkeys(f'{m.baseline:g}' for m in points))}; differs at the level"
    return {"verdict": verdict, "reading": reading, "statistic": statistic, "dof": len(points), "limit": limit}


def judge_constant(points: list[Measured], claim: Claim) -> dict[str, Any]:
    dof = 0
    for key in dict.fromkeys(m.group for m in points):
        members = [m for m in points if m.group == key]
        spreads = np.array([ours_spread(m) for m in members])
        means = np.array([m.mean for m in members])
        exact = spreads == 0
        centre = means[exact].mean() if exact.any() else np.average(means, weights=spreads**-2.0)
        for m, s in zip(members, spreads):
            m.z = ratio(m.mean - centre, float(s))
        dof += len(members) - 1
    statistic = float(sum(m.z**2 for m in points))
    limit = chi2_limit(dof) if dof else math.nan
    verdict = "agrees" if dof and statistic <= limit else "differs"
    return {"verdict": verdict, "statistic": statistic, "dof": dof, "limit": limit}


def judge_order(points: list[Measured], claim: Claim) -> dict[str, Any]:
    steps = np.diff([m.mean for m in points])
    ordered = (steps > 0).all() if claim.check == "increasing" else (steps < 0).all()
    return {"verdict": "agrees" if len(points) > 1 and ordered else "differs"}


def judge_bound(points: list[Measured], claim: Claim) -> dict[str, Any]:
    sign = 1.0 if claim.check == "above" else -1.0
    for m in points:
        m.z = ratio(m.mean - m.paper, ours_spread(m))
    return {"verdict": "agrees" if all(sign * m.z > 2.0 for m in points) else "differs"}


def judge_share(points: list[Measured], claim: Claim) -> dict[str, Any]:
    """The score test of the share against the value: |z| ≤ 2, the value inside Wilson's interval at z = 2."""
    for m in points:
        m.z = ratio(m.mean - m.paper, math.sqrt(m.paper * (1.0 - m.paper) / m.n))
    return {"verdict": "agrees" if all(abs(m.z) <= 2.0 for m in points) else "differs"}


def judge_decays(points: list[Measured], claim: Claim) -> dict[str, Any]:
    """Falling at every saved step of the last decade, and at the end more than 2 sd below the start."""
    for m in points:
        m.z = ratio(m.series[-1] - m.series[0], m.sd)
    agrees = all(len(m.series) > 2 and (np.diff(m.series[1:]) < 0).all() and m.z < -2.0 for m in points)
    return {"verdict": "agrees" if agrees else "differs"}


def judge_slope(points: list[Measured], claim: Claim) -> dict[str, Any]:
    """Flat: every slope within ``resolution + 2 sd`` of 0; rising (falling): every mean slope more than 2 sd above
    (below) 0, the sign rule (``mean / sd`` is no z: docs/claims.md)."""
    if claim.check in ("rising", "falling"):
        sign = 1.0 if claim.check == "rising" else -1.0
        moving = all(sign * m.mean > 2.0 * m.sd for m in points)
        return {"verdict": "agrees" if moving else "differs", "reading": "" if moving else f"not {claim.check}"}
    up = any(m.mean > claim.resolution + 2.0 * m.sd for m in points)
    down = any(m.mean < -(claim.resolution + 2.0 * m.sd) for m in points)
    reading = "still rising" if up else "still falling" if down else ""
    return {"verdict": "differs" if reading else "agrees", "reading": reading}


#: check -> its judge
JUDGES = {"equal": judge_equal, "constant": judge_constant, "below": judge_bound, "above": judge_bound}
JUDGES |= {"decays": judge_decays, "increasing": judge_order, "decreasing": judge_order, "share": judge_share}
JUDGES |= dict.fromkeys(SLOPE_CHECKS, judge_slope)


def judge(points: list[Measured], claim: Claim) -> dict[str, Any]:
    """The row's verdict, why a *differs*, the other test sizes' verdicts, the farthest point and every point."""
    row = JUDGES[claim.check](points, claim) | {"n": min(m.n for m in points)}
    row["test_sizes"] = verdicts_at_test_sizes(points, claim)
    # the chance line counts it (docs/claims.md, How many failures chance alone gives)
    row["chance"] = claim.check in CHANCE_CHECKS and not claim.post_hoc and any(ours_spread(m) > 0 for m in points)
    if row["verdict"] != "agrees":  # explained, marginal or not explained (docs/claims.md, Why a row differs)
        statistic, dof = row.get("statistic", math.nan), row.get("dof")
        marginal = dof and math.isfinite(statistic) and statistic <= chi2_limit(dof, MARGINAL_LEVEL)
        row["why"] = "explained" if claim.reason else "marginal" if marginal else "not explained"
    # a z, the row's and each point's, but for decays and slopes, and for a bound without a test error (docs/claims.md)
    with_z = claim.check not in ("decays", *SLOPE_CHECKS)
    with_z &= claim.check not in ("below", "above") or any(m.test_se > 0 for m in points)
    if claim.check not in ("increasing", "decreasing"):
        worst = max(points, key=lambda m: shortfall(m, claim, with_z))
        row |= {"paper_value": worst.paper, "ours_mean": worst.mean, "ours_sd": worst.sd, "test_se": worst.test_se}
        row |= {"paper_se": worst.paper_se, "paper_spread": worst.spread if claim.check == "equal" else None}
        row["z"] = worst.z if with_z else math.nan
    row["detail"] = "; ".join(describe_point(m, claim.check, claim.versus, with_z) for m in points)
    return row


def shortfall(m: Measured, claim: Claim, with_z: bool) -> float:
    """How far from agreeing (the row shows the farthest): by the z it prints (|z|, or against the bound's side); else
    by how far it misses the rule's 2 sd from the bound or a slope's 0 (flat: resolution + 2 sd), in its units."""
    side = {"above": 1.0, "rising": 1.0, "below": -1.0, "falling": -1.0}.get(claim.check)
    if claim.check == "decays":  # the smallest fall, last / first
        return m.series[-1] / m.series[0] if m.series[0] else math.inf
    if claim.check == "flat":
        return abs(m.mean) - claim.resolution - 2.0 * m.sd
    if side is None or with_z:
        return abs(m.z) if side is None else -side * m.z
    return 2.0 * ours_spread(m) - side * (m.mean - (m.paper if claim.check in ("above", "below") else 0.0))


def describe_point(m: Measured, check: str, versus: str | None, with_z: bool) -> str:
    if check == "decays":
        falling = "falling" if (np.diff(m.series[1:]) < 0).all() else "not falling"
        factor = f", ×{m.series[-1] / m.series[1]:.3g} over it" if len(m.series) > 1 and m.series[1] else ""
        ends = f"{number(m.series[0])} → {number(m.series[-1])}"
        return f"{m.label}: {ends}, {falling} over the last decade of steps{factor}"
    if check in SLOPE_CHECKS:
        label, last = (f"{m.label} − {versus}", "difference at the last step") if versus else (m.label, "last step")
        return f"{label}: {m.mean:+.3g} ± {m.sd:.2g} per decade of steps ({last}: {number(m.level)})"
    if check == "share":  # Wilson's score interval at z = 2, (k + 2 ∓ 2·√(k(n − k)/n + 1))/(n + 4)
        k, half = m.mean * m.n, 2.0 * math.sqrt(m.n * m.mean * (1.0 - m.mean) + 1.0)
        interval = f"Wilson interval {number((k + 2.0 - half) / (m.n + 4))}–{number((k + 2.0 + half) / (m.n + 4))}"
        return f"{m.label}: {round(k)} of {m.n} seeds, {interval} vs {number(m.paper)} (z = {m.z:+.2f})"
    paper = "" if m.paper is None else f" vs {number(m.paper)}" + (f" ± {number(m.spread)}" if m.spread else "")
    z = "" if math.isnan(m.z) or not with_z else f" (z = {m.z:+.2f})"
    return f"{m.label}: {number(m.mean)} ± {m.sd:.2g}{paper}{z}"


def describe_quantity(claim: Claim) -> str:
    q = claim.quantity
    name = f"{q.column}/{q.over}" if q.over else q.column
    where = f" ({q.test_set})" if q.test_set else ""
    versus = f", minus the same seed's of {claim.versus}" if claim.versus else ""
    if claim.kind == "scaling":
        return f"{q.column} ± se"
    if claim.check == "decays":
        return f"{name}{where}, over the last decade of steps"
    if claim.check in SLOPE_CHECKS:
        return f"{name}{where}: change per decade of steps, over the last decade{versus}"
    scaled = " / ((K−1)/K)" if q.divide_by else ""
    at = {"value": f"at the {q.step} step", "ratio": "last / first step", "change": "last − first step"}
    when = "at the same rescaled time ((K−1)/K)·step" if q.time == "rescaled" else at[q.of]
    share = f" ≥ {q.at_least:g}: the share of seeds" if q.at_least is not None else ""
    return f"{name}{where}{scaled}, {when}{share}{versus}"


# --- the error budget ---------------------------------------------------------------------------------------------


def combined_spread(m: Measured, resolution: float) -> float:
    """Check equal: our sd, the test set's error, the paper's ±, its sampling error and half its printed precision."""
    return math.sqrt(m.sd**2 + m.test_se**2 + m.spread**2 + m.paper_se**2 + (resolution / 2.0) ** 2)


def ours_spread(m: Measured) -> float:
    return math.hypot(m.sd, m.test_se)


#: the metrics measured on a test set: a level of one carries the test set's sampling error
TEST_SET_METRICS = ("accuracy", "logit_error", "test_loss")


def is_level(claim: Claim) -> bool:
    """A test-set metric's value at one step: it carries the test set's sampling error (docs/claims.md)."""
    q = claim.quantity
    return q.column in TEST_SET_METRICS and q.of == "value" and claim.check not in ("decays", "share", *SLOPE_CHECKS)


def metric_bound(column: str, loss: str = "square", c: float = 0.0, K: int = 2) -> float | None:
    """The largest value of ``column`` on one prompt (None: unbounded or not a test-set metric): every metric is convex
    in the output, which lies in the hull of 0 and the codes, so the bound is at a code ``u_c' ≠ u_c`` (distance² 2)."""
    if column != "test_loss":
        return {"accuracy": 1.0, "logit_error": 2.0}.get(column)
    cross_entropy = math.log(math.e + K - 1)
    squentropy = cross_entropy + (K * K - K - 1) / (K * K * (K - 1))
    mixture = (1.0 - c) + c * cross_entropy
    return {"square": 1.0, "cross_entropy": cross_entropy, "mixture": mixture, "squentropy": squentropy}.get(loss)


def sampling_error(mean: float, bound: float | None, size: int) -> float:
    """The largest standard error of a mean over ``size`` prompts of a metric in ``[0, bound]``: ``√(μ(B − μ)/size)``."""
    if bound is None or size <= 0 or not math.isfinite(mean):
        return 0.0
    return math.sqrt(max(mean * (bound - mean), 0.0) / size)


# --- variants that share a test set -------------------------------------------------------------------------------


#: the columns that say which test set a value is measured on: points on one share its sampling error
TEST_SET_KEY = ("test_set", "d", "N", "K", "delta", "test_size")


def chi_square(points: list[Measured], resolution: float) -> float:
    """Check equal: ``dᵀ Σ⁻¹ d`` over the differences ours − paper, infinite where a point with no spread at all
    differs; points on one test set share its error, fully correlated (not conservative either way: docs/claims.md)."""
    differences = np.array([m.mean - m.paper for m in points])
    test_se, paper_se = np.array([m.test_se for m in points]), np.array([m.paper_se for m in points])
    shared = np.array([[a.test_key is not None and a.test_key == b.test_key for b in points] for a in points])
    cov = np.where(shared, np.outer(test_se, test_se) + np.outer(paper_se, paper_se), 0.0)
    np.fill_diagonal(cov, np.array([combined_spread(m, resolution) for m in points]) ** 2)
    spread = np.sqrt(np.diag(cov))
    if np.any((spread == 0) & (differences != 0)):
        return math.inf
    keep = spread > 0
    d, c = differences[keep], cov[np.ix_(keep, keep)]
    return float(d @ np.linalg.pinv(c) @ d) if len(d) else 0.0


# --- the assumed test size ---------------------------------------------------------------------------------------


def verdicts_at_test_sizes(points: list[Measured], claim: Claim) -> str:
    """Check equal: the verdicts at the assumed test sizes where they differ (docs/claims.md, The assumed test size)."""
    if claim.check != "equal" or not claim.paper_test_size or not any(m.paper_se for m in points):
        return ""
    out = {}
    for size in sorted({claim.paper_test_size, *claim.paper_test_sizes}):
        scale = math.sqrt(claim.paper_test_size / size)
        out[size] = judge_equal([replace(m, paper_se=m.paper_se * scale) for m in points], claim)["verdict"]
    return ", ".join(f"{v} at {size}" for size, v in out.items()) if len(set(out.values())) > 1 else ""


# --- how many failures chance alone gives --------------------------------------------------------------------------


def expected_by_chance(card: pd.DataFrame) -> tuple[int, float, int, float]:
    """Over the rows that count: m, the expected failures ``m·(1 − LEVEL)``, the rows not *agrees*, P(that many or more)."""
    tested = card[card["chance"] & (card["verdict"] != "not run")]
    m = len(tested)
    failed = int((tested["verdict"] != "agrees").sum())
    p_false = 1.0 - LEVEL
    return m, m * p_false, failed, float(binom.sf(failed - 1, m, p_false)) if m else math.nan
