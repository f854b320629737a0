"""The reduced-dynamics audit of the binary paper's convergence proof (docs/method.md §7.3): per ``sigma``, GD on
the weighted sample (``gd``), its flow over the same window (``flow``) and beyond (``continuation``), the flow on a
plain sample (``plain``), the population flow at the audit's nodes and at fewer (``population``,
``population/2``, ...) and with other uniforms (``population_swap``); one row per (source, recorded time)."""

from __future__ import annotations

import logging
import time as clock
from dataclasses import dataclass

import numpy as np
import pandas as pd

from onenn.base.progress import EVERY, FlowProgress, StepProgress
from onenn.base.settings import Settings, schema_defaults
from onenn.maths.steps import log_spaced_steps
from onenn.maths.stream import numpy_generator
from onenn.theory.reduced.checks import check_integer
from onenn.theory.reduced.dynamics import Trajectory, gradient_descent, gradient_flow, log_times
from onenn.theory.reduced.late_time import asymptote
from onenn.theory.reduced.loss import monte_carlo_estimates
from onenn.theory.reduced.population import PANEL, SWAP_STREAM, population_flow, quadrature, stuck_mass
from onenn.theory.reduced.sampling import audit_sample, sample_inner_products
from onenn.theory.reduced.thresholds import resolve_sigma

SAMPLE_SOURCES = ("gd", "flow", "continuation", "plain")
POPULATION = "population"
#: the population flow at all the nodes with the seed swap's uniforms, to the sample's end
POPULATION_SWAP = "population_swap"


def population_source(level: int) -> str:
    """The source name of the population flow at ``2^level`` times fewer nodes in each variable."""
    return POPULATION if level == 0 else f"{POPULATION}/{2**level}"


def sources(levels: int) -> tuple[str, ...]:
    return SAMPLE_SOURCES + tuple(population_source(k) for k in range(levels)) + (POPULATION_SWAP,)


@dataclass(frozen=True)
@schema_defaults("audit")
class AuditSettings(Settings):
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


def _check_levels(s: AuditSettings) -> None:
    """The node counts must stay multiples of the quadrature's panels at every coarser level."""
    check_integer("levels", s.levels, minimum=1)
    scale = 2 ** (s.levels - 1)
    for name, value, unit in (
        ("t1_nodes", s.t1_nodes, 4 * PANEL),
        ("gap_nodes", s.gap_nodes, PANEL),
        ("third_nodes", s.third_nodes, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value % (unit * scale):
            raise ValueError(
                f"{name} must be a positive multiple of {unit * scale} ({unit} at the coarsest of levels={s.levels}),"
                f" got {value!r}"
            )


def _population_rows(source: str, flow: Trajectory) -> pd.DataFrame:
    """Rows of a population flow: the loss is the quadrature's (no sampling error: ``reduced_loss_se`` is NaN)."""
    out = pd.DataFrame(
        {
            "source": source,
            "step": np.full(len(flow.time), -1, dtype=np.int64),
            "time": flow.time,
            "xi1": flow.xi1,
            "xi2": flow.xi2,
            "reduced_loss": flow.loss,
            "reduced_loss_se": np.nan,
            "mass": flow.mass,
        }
    )
    return _derived(out)


def _derived(out: pd.DataFrame) -> pd.DataFrame:
    """The columns every row carries, from ``xi1, xi2, reduced_loss`` and the settings' ``N, d`` (added later)."""
    out["xi_ratio"] = out["xi1"] / out["xi2"]
    out["xi2_minus_xi1"] = out["xi2"] - out["xi1"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["loss_log_time"] = np.where(out["time"] > 1, out["reduced_loss"] * np.log(out["time"]), np.nan)
    return out


def _rows(
    source: str,
    time: np.ndarray,
    xi1: np.ndarray,
    xi2: np.ndarray,
    t: np.ndarray,
    w: np.ndarray | None,
    step: np.ndarray | None = None,
) -> pd.DataFrame:
    """Trajectory rows with the reduced loss and its standard error recomputed on the sample ``(t, w)``."""
    est = monte_carlo_estimates(xi1, xi2, t, weights=w)
    out = pd.DataFrame(
        {
            "source": source,
            "step": np.full(len(time), -1, dtype=np.int64) if step is None else np.asarray(step, dtype=np.int64),
            "time": np.asarray(time, dtype=np.float64),
            "xi1": xi1,
            "xi2": xi2,
            "reduced_loss": [e.loss for e in est],
            "reduced_loss_se": [e.loss_se for e in est],
            "grad_xi1": [e.grad_xi1 for e in est],
            "grad_xi2": [e.grad_xi2 for e in est],
        }
    )
    return _derived(out)


def run_audit(s: AuditSettings, log: logging.Logger | None = None, *, progress_every: float = EVERY) -> pd.DataFrame:
    """All trajectories of one audit run, one row per (source, recorded time). With ``log``, each stage's time and
    progress lines at most every ``progress_every`` seconds; the table is the same either way."""

    def steps(stage: str) -> StepProgress | None:
        return StepProgress(log.info, every=progress_every, prefix=f"{stage}: ", loss_name="loss") if log else None

    def flow(stage: str) -> FlowProgress | None:
        return FlowProgress(log.info, every=progress_every, prefix=f"{stage}: ") if log else None

    sigma = resolve_sigma(s.sigma, s.N, s.d)
    _check_levels(s)
    if not s.lr * s.steps < s.sample_time_end <= s.time_end:
        raise ValueError(
            f"sample_time_end must lie in (lr * steps = {s.lr * s.steps:g}, time_end = {s.time_end:g}],"
            f" got {s.sample_time_end!r}"
        )
    t, w, mass = weighted_sample(s)
    if log:
        log.info("sigma=%s -> %.6g; sample of %d prompts, raw mass %.5f", s.sigma, sigma, len(t), mass)
    started = clock.perf_counter()
    record_steps = log_spaced_steps(s.steps, s.n_eval)
    gd = gradient_descent(0.0, sigma, s.lr, s.steps, t, s.d, record_steps, weights=w, progress=steps("gd"))
    if log:
        log.info("gd: %d steps in %.1f s", s.steps, clock.perf_counter() - started)
    time_gd = float(gd.time[-1])
    tight = {"rtol": 1e-10, "atol": 1e-12}
    overlap = gradient_flow(
        0.0, sigma, 0.0, time_gd, t, s.d, record_times=gd.time, weights=w, **tight, progress=flow("flow")
    )
    start = (float(gd.xi1[-1]), float(gd.xi2[-1]), time_gd, s.sample_time_end, t, s.d)
    cont = gradient_flow(*start, n_eval=s.n_eval, weights=w, progress=flow("continuation"))
    times = np.unique(np.concatenate([gd.time, cont.time]))
    t_plain = sample_inner_products(len(t), s.N, s.d, numpy_generator(s.seed, "audit", 2))
    plain = gradient_flow(0.0, sigma, 0.0, s.sample_time_end, t_plain, s.d, record_times=times, progress=flow("plain"))
    parts = [
        _rows("gd", gd.time, gd.xi1, gd.xi2, t, w, step=gd.step).assign(mass=mass),
        _rows("flow", overlap.time, overlap.xi1, overlap.xi2, t, w).assign(mass=mass),
        _rows("continuation", cont.time, cont.xi1, cont.xi2, t, w).assign(mass=mass),
        _rows("plain", plain.time, plain.xi1, plain.xi2, t_plain, None).assign(mass=1.0),
    ]
    late = log_times(time_gd, s.time_end, s.n_eval, decades=True)
    record = np.unique(np.concatenate([gd.time, cont.time, late]))  # the sample's times too: compared there
    for level in range(s.levels):
        begun = clock.perf_counter()
        q = quadrature(s.N, s.d, s.t1_nodes >> level, s.gap_nodes >> level, s.seed, third_nodes=s.third_nodes >> level)
        name = f"{population_source(level)} {_resolution(s, level)}"
        trajectory = population_flow(0.0, sigma, s.time_end, q, record, progress=flow(name))
        parts.append(_population_rows(population_source(level), trajectory))
        if log:
            log.info(
                "population flow at %s nodes to t=%g in %.1f s",
                _resolution(s, level),
                s.time_end,
                clock.perf_counter() - begun,
            )
    parts.append(_seed_swap_rows(s, sigma, record, flow(f"{POPULATION_SWAP} {_resolution(s, 0)}"), log))
    table = pd.concat(parts, ignore_index=True)
    table["sigma"] = sigma
    table["boundary"] = np.where(table["xi1"] > 0, 1.0 - table["xi2"] / table["xi1"], -np.inf)
    table["stuck_mass"] = [stuck_mass(a, b, s.N, s.d) for a, b in zip(table["xi1"], table["xi2"], strict=True)]
    _asymptote_columns(table, s)
    if log:
        log.info("audit done in %.1f s", clock.perf_counter() - started)
    return table


def _resolution(s: AuditSettings, level: int) -> str:
    """``t1 x gap x third`` nodes at ``level`` (each halved per level)."""
    return f"{s.t1_nodes >> level} x {s.gap_nodes >> level} x {s.third_nodes >> level}"


def _seed_swap_rows(
    s: AuditSettings,
    sigma: float,
    record: np.ndarray,
    progress: FlowProgress | None,
    log: logging.Logger | None,
) -> pd.DataFrame:
    """The seed swap: the population flow at all the nodes with the uniforms of instance ``SWAP_STREAM``, to
    ``sample_time_end`` (the early times, where the drawn inner products carry the quadrature's noise)."""
    begun = clock.perf_counter()
    q = quadrature(s.N, s.d, s.t1_nodes, s.gap_nodes, s.seed, stream=SWAP_STREAM, third_nodes=s.third_nodes)
    early = record[record <= s.sample_time_end]
    trajectory = population_flow(0.0, sigma, float(early[-1]), q, early, progress=progress)
    if log:
        log.info(
            "population flow with swapped uniforms at %s nodes to t=%g in %.1f s",
            _resolution(s, 0),
            early[-1],
            clock.perf_counter() - begun,
        )
    return _population_rows(POPULATION_SWAP, trajectory)


def _asymptote_columns(table: pd.DataFrame, s: AuditSettings) -> None:
    """Add the late-time check (docs/method.md §7.3): ``loss_xi1``, its limit ``asymptote`` and ``stuck_loss_xi1``."""
    table["loss_xi1"] = table["reduced_loss"] * table["xi1"]
    table["asymptote"] = asymptote(s.N, s.d)
    table["stuck_loss_xi1"] = 0.5 * table["stuck_mass"] * table["xi1"]
