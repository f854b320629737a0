"""The reduced-dynamics audit of the binary paper's convergence proof (docs/method.md §7.3; its sources: the
``DESCRIPTIONS`` of ``source``), one row per (source, recorded time); and the thresholds on ``sigma`` of §7."""

import logging
import math
import time as clock
from dataclasses import dataclass

import numpy as np
import pandas as pd

from onenn.base.progress import EVERY, FlowProgress, StepProgress
from onenn.base.settings import Settings
from onenn.maths.family import XI_RATIO_BOUND
from onenn.maths.nodes import audit_problems
from onenn.maths.steps import log_spaced_steps
from onenn.maths.stream import numpy_generator
from onenn.theory.reduced.dynamics import Trajectory, gradient_descent, gradient_flow, log_times
from onenn.theory.reduced.late_time import asymptote
from onenn.theory.reduced.loss import monte_carlo_estimates
from onenn.theory.reduced.population import REST_STREAM, SWAP_STREAM, population_flow, quadrature, stuck_mass
from onenn.theory.reduced.sampling import audit_sample, check_integer, sample_inner_products


def sigma_threshold_theorem1(N: int, d: int) -> float:
    """Theorem 1's explicit part of the bound, ``2 max(log(N d), -log(1 - (N sqrt(d))^(-1/d)))`` (method.md §7.3)."""
    check_integer("N", N)
    check_integer("d", d, minimum=2)
    return 2.0 * max(math.log(N * d), -math.log(1.0 - (N * math.sqrt(d)) ** (-1.0 / d)))


def lemma12_a(N: int, d: int) -> float:
    """``a_{N,d} = (2 N sqrt(d))^(-2/(d-3))`` (needs ``d >= 4``)."""
    check_integer("N", N)
    check_integer("d", d, minimum=4)
    return (2.0 * N * math.sqrt(d)) ** (-2.0 / (d - 3))


def sigma_threshold_lemma12(N: int, d: int) -> float:
    """Lemma 12's bound ``3 log(2 N^4 d / a_{N,d})`` (needs ``d >= 4``)."""
    return 3.0 * math.log(2.0 * N**4 * d / lemma12_a(N, d))


def resolve_sigma(sigma: float | str, N: int, d: int) -> float:
    """A number, or the threshold of docs/method.md §7 it names: ``theorem1`` (its explicit part) or ``lemma12``."""
    rules = {"theorem1": sigma_threshold_theorem1, "lemma12": sigma_threshold_lemma12}
    if isinstance(sigma, str) and sigma in rules:
        return rules[sigma](N, d)
    if isinstance(sigma, (int, float)) and not isinstance(sigma, bool) and math.isfinite(sigma):
        return float(sigma)
    raise ValueError(f"sigma must be a finite number or one of {', '.join(rules)}; got {sigma!r}")


#: the population flow at all the nodes with the seed swap's uniforms, to the sample's end
POPULATION_SWAP = "population_swap"


@dataclass(frozen=True)
class AuditSettings(Settings, schema="audit"):
    """One audit run. The sample: ``n_plain`` plain prompts and ``n_max x n_gap`` stratified ones."""

    WHAT = "audit settings"

    d: int
    N: int
    sigma: float | str
    lr: float
    steps: int
    time_end: float
    sample_time_end: float
    n_plain: int
    n_max: int
    n_gap: int
    gap_min: float
    t1_nodes: int
    gap_nodes: int
    third_nodes: int
    levels: int
    n_eval: int
    seed: int = 0


def weighted_sample(s: AuditSettings) -> tuple[np.ndarray, np.ndarray, float]:
    """The weighted sample ``(t, weights, mass)`` its GD and flows run on (stream 0 of the seed)."""
    return audit_sample(s.n_plain, s.n_max, s.n_gap, s.N, s.d, numpy_generator(s.seed, "audit", 0), s.gap_min)


#: what the columns of an audit table mean (``run_audit``'s, and ``sigma_rule`` the audit job adds)
DESCRIPTIONS = {
    "sigma_rule": "the config's `sigma` that gave `sigma`: a number, `theorem1` or `lemma12`",
    "sigma": "the initial scale σ it resolves to: the trajectories start at `(ξ1, ξ2) = (0, σ)` (`continuation` at GD's end)",
    "source": "the trajectory: `gd`, `flow`, `continuation`, `plain`, `population`, `population/2`, ..., `population_swap` (method.md §7)",
    "step": "the GD step on the rows of `gd`, −1 on the flows' rows",
    "time": "the flow's time (`lr · step` on the rows of `gd`)",
    "xi1": "ξ1 on the trajectory",
    "xi2": "ξ2 on the trajectory",
    "reduced_loss": "the reduced binary loss at `(ξ1, ξ2)`: on the trajectory's sample, or the population quadrature's",
    "reduced_loss_se": "its standard error on the sample (NaN on the population's rows: no sampling)",
    "grad_xi1": "∂/∂ξ1 of the reduced loss on the sample (NaN on the population's rows)",
    "grad_xi2": "∂/∂ξ2 of the reduced loss on the sample (NaN on the population's rows)",
    "xi_ratio": "`ξ1/ξ2`, against the binary paper's bound 7/15",
    "xi2_minus_xi1": "`ξ2 − ξ1`",
    "loss_log_time": "`reduced_loss · log(time)` where `time > 1` (NaN before): bounded if the loss is `O(1/log t)`",
    "mass": "the quadrature's total weight at the point (≈ 1) on the population's rows, NaN elsewhere",
    "boundary": "`r = 1 − ξ2/ξ1` (−∞ where `ξ1 ≤ 0`)",
    "stuck_mass": "`F(r)^N`: the mass of prompts beyond the boundary",
    "loss_xi1": "`reduced_loss · ξ1`: tends to `asymptote` as ξ1 grows, plus the stuck mass's share (method.md §7.3)",
    "asymptote": "`C = (ln 2 − ½)·N(N−1)·∫ f² F^(N−2) dt`, the closed-form limit of `loss_xi1`",
    "stuck_loss_xi1": "`½·stuck_mass·ξ1`: the stuck mass's share of `loss_xi1`",
}


def _rows(
    source: str, flow: Trajectory, mass, t: np.ndarray | None = None, w: np.ndarray | None = None
) -> pd.DataFrame:
    """A trajectory's rows; on a sample ``(t, w)`` its loss, standard error and gradient are recomputed there."""
    if t is None:
        values = {"reduced_loss": flow.loss, "reduced_loss_se": np.nan}
    else:
        est = monte_carlo_estimates(flow.xi1, flow.xi2, t, weights=w)
        values = {"reduced_loss": [e.loss for e in est], "reduced_loss_se": [e.loss_se for e in est]}
        values |= {"grad_xi1": [e.grad_xi1 for e in est], "grad_xi2": [e.grad_xi2 for e in est]}
    step = np.full(len(flow.time), -1, dtype=np.int64) if flow.step is None else np.asarray(flow.step, dtype=np.int64)
    out = pd.DataFrame({"source": source, "step": step, "time": flow.time, "xi1": flow.xi1, "xi2": flow.xi2} | values)
    out["xi_ratio"] = out["xi1"] / out["xi2"]
    out["xi2_minus_xi1"] = out["xi2"] - out["xi1"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["loss_log_time"] = np.where(out["time"] > 1, out["reduced_loss"] * np.log(out["time"]), np.nan)
    out["mass"] = mass
    return out


def run_audit(s: AuditSettings, log: logging.Logger | None = None, *, progress_every: float = EVERY) -> pd.DataFrame:
    """All trajectories of one audit run, one row per (source, recorded time). With ``log``, each stage's time and
    progress lines at most every ``progress_every`` seconds; the table is the same either way."""

    def steps(stage: str) -> StepProgress | None:
        return StepProgress(log.info, every=progress_every, prefix=f"{stage}: ", loss_name="loss") if log else None

    def flow(stage: str) -> FlowProgress | None:
        return FlowProgress(log.info, every=progress_every, prefix=f"{stage}: ") if log else None

    sigma = resolve_sigma(s.sigma, s.N, s.d)
    check_integer("levels", s.levels, minimum=1)
    if problems := audit_problems(vars(s)):
        raise ValueError("; ".join(f"{key} {message}" for key, message in problems))
    t, w, mass = weighted_sample(s)
    say = log.info if log else lambda *args: None
    say("sigma=%s -> %.6g; sample of %d prompts, raw mass %.5f", s.sigma, sigma, len(t), mass)
    started = clock.perf_counter()
    record_steps = log_spaced_steps(s.steps, s.n_eval)
    gd = gradient_descent(0.0, sigma, s.lr, s.steps, t, s.d, record_steps, weights=w, progress=steps("gd"))
    say("gd: %d steps in %.1f s", s.steps, clock.perf_counter() - started)
    time_gd = float(gd.time[-1])
    overlap = gradient_flow(
        0.0, sigma, 0.0, time_gd, t, s.d, record_times=gd.time, weights=w, rtol=1e-10, atol=1e-12, progress=flow("flow")
    )
    start = (float(gd.xi1[-1]), float(gd.xi2[-1]), time_gd, s.sample_time_end, t, s.d)
    cont = gradient_flow(*start, n_eval=s.n_eval, weights=w, progress=flow("continuation"))
    times = np.unique(np.concatenate([gd.time, cont.time]))
    t_plain = sample_inner_products(len(t), s.N, s.d, numpy_generator(s.seed, "audit", 2))
    plain = gradient_flow(0.0, sigma, 0.0, s.sample_time_end, t_plain, s.d, record_times=times, progress=flow("plain"))
    parts = [_rows(source, run, mass, t, w) for source, run in (("gd", gd), ("flow", overlap), ("continuation", cont))]
    parts.append(_rows("plain", plain, 1.0, t_plain))
    late = log_times(time_gd, s.time_end, s.n_eval, decades=True)
    decades = 10.0 ** np.arange(0, math.floor(math.log10(s.time_end)) + 1)  # the pages' times: computed there
    record = np.unique(np.concatenate([gd.time, cont.time, late, decades]))  # the sample's times: compared there
    early = record[record <= s.sample_time_end]  # the seed swap's: where the drawn points carry the noise
    runs = [(f"population/{2**k}" if k else "population", k, REST_STREAM, record, s.time_end) for k in range(s.levels)]
    for source, level, stream, at, end in runs + [(POPULATION_SWAP, 0, SWAP_STREAM, early, float(early[-1]))]:
        begun = clock.perf_counter()
        n1, n2, n3 = s.t1_nodes >> level, s.gap_nodes >> level, s.third_nodes >> level
        q = quadrature(s.N, s.d, n1, n2, s.seed, stream=stream, third_nodes=n3)
        watch = flow(f"{source} {n1} x {n2} x {n3}")
        trajectory = population_flow(0.0, sigma, end, q, at, progress=watch, bound=XI_RATIO_BOUND)
        parts.append(_rows(source, trajectory, trajectory.mass))
        what, elapsed = "with swapped uniforms " if stream == SWAP_STREAM else "", clock.perf_counter() - begun
        say("population flow %sat %d x %d x %d nodes to t=%g in %.1f s", what, n1, n2, n3, end, elapsed)
    table = pd.concat(parts, ignore_index=True)
    table["sigma"] = sigma
    table["boundary"] = np.where(table["xi1"] > 0, 1.0 - table["xi2"] / table["xi1"], -np.inf)
    table["stuck_mass"] = [stuck_mass(a, b, s.N, s.d) for a, b in zip(table["xi1"], table["xi2"], strict=True)]
    table["loss_xi1"] = table["reduced_loss"] * table["xi1"]  # the late-time check (docs/method.md §7.3)
    table["asymptote"] = asymptote(s.N, s.d)
    table["stuck_loss_xi1"] = 0.5 * table["stuck_mass"] * table["xi1"]
    say("audit done in %.1f s", clock.perf_counter() - started)
    return table
