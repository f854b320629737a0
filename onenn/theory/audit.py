"""The reduced-dynamics audit of the binary paper's convergence proof (docs/method.md §7). numpy/scipy only, no torch.

Audit (kind ``audit``), per ``sigma``, at ``d = 8, N = 32`` in the config:

- ``gd``: exact gradient descent on ``(xi1, xi2)`` (docs/method.md §4 update) for ``steps`` steps of size ``lr``, with the
  gradient of the weighted population sample of ``reduced.sampling.audit_sample`` (fixed, common to all steps);
- ``flow``: the gradient flow from the same start over the same time window, recorded at GD's times (time
  ``= lr * step``): where the two overlap they must agree to ``O(lr)``;
- ``continuation``: the flow from GD's last point to ``time_end`` (adaptive ODE solver in log-time);
- ``resample``: the flow from the start to ``time_end`` on an independent sample of the same design: its
  distance to ``flow``/``continuation`` is the estimate's own error;
- ``plain``: the same flow on a plain sample of the same size, to show what a naive sample does at large time.

Every row carries ``xi1, xi2``, ``xi_ratio = xi1/xi2`` (against ``7/15``), ``xi2 − xi1``, the reduced loss
``reduced_loss``, its standard error ``reduced_loss_se``, and ``loss_log_time = reduced_loss * log(time)``
(bounded if the loss is ``O(1/log t)``); every table row also carries ``sigma``, the initial scale, and
``sigma_rule``, the config's ``sigma`` that gave it (a number, ``theorem1`` or ``lemma12``).
"""

from __future__ import annotations

import logging
import time as clock
from dataclasses import dataclass

import numpy as np
import pandas as pd

from onenn.base.settings import Settings
from onenn.steps import log_spaced_steps
from onenn.theory.reduced.dynamics import gradient_descent, gradient_flow
from onenn.theory.reduced.loss import monte_carlo_estimates
from onenn.theory.reduced.sampling import audit_sample, sample_inner_products
from onenn.theory.reduced.thresholds import resolve_sigma

SOURCES = ("gd", "flow", "continuation", "resample", "plain")


@dataclass(frozen=True)
class AuditSettings(Settings):
    """One audit run. The sample: ``n_plain`` plain prompts and ``n_max x n_gap`` stratified ones."""

    WHAT = "audit settings"

    d: int = 8
    N: int = 32
    sigma: float | str = 3.0
    lr: float = 0.1
    steps: int = 10_000
    time_end: float = 1e12
    n_plain: int = 32_768
    n_max: int = 256
    n_gap: int = 128
    gap_min: float = 1e-8
    n_eval: int = 60
    seed: int = 0


def _sample(s: AuditSettings, stream: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The weighted sample of stream 0 (main) or 1 (resample)."""
    return audit_sample(s.n_plain, s.n_max, s.n_gap, s.N, s.d, np.random.default_rng([s.seed, stream]), s.gap_min)


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
    out["xi_ratio"] = out["xi1"] / out["xi2"]
    out["xi2_minus_xi1"] = out["xi2"] - out["xi1"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["loss_log_time"] = np.where(out["time"] > 1, out["reduced_loss"] * np.log(out["time"]), np.nan)
    return out


def run_audit(s: AuditSettings, log: logging.Logger | None = None) -> pd.DataFrame:
    """All five trajectories of one audit run, tidy: one row per (source, recorded time)."""
    sigma = resolve_sigma(s.sigma, s.N, s.d)
    t, w, mass = _sample(s, 0)
    if log:
        log.info("sigma=%s -> %.6g; sample of %d prompts, raw mass %.5f", s.sigma, sigma, len(t), mass)
    started = clock.perf_counter()
    gd = gradient_descent(
        0.0, sigma, s.lr, s.steps, t, s.d, record_steps=log_spaced_steps(s.steps, s.n_eval), weights=w
    )
    if log:
        log.info(
            "gd: %d steps in %.1f s; end xi=(%.4g, %.4g)",
            s.steps,
            clock.perf_counter() - started,
            gd.xi1[-1],
            gd.xi2[-1],
        )
    overlap = gradient_flow(
        0.0, sigma, 0.0, float(gd.time[-1]), t, s.d, record_times=gd.time, weights=w, rtol=1e-10, atol=1e-12
    )
    time_gd = float(gd.time[-1])
    cont = gradient_flow(float(gd.xi1[-1]), float(gd.xi2[-1]), time_gd, s.time_end, t, s.d, n_eval=s.n_eval, weights=w)
    times = np.unique(np.concatenate([gd.time, cont.time]))
    t_b, w_b, mass_b = _sample(s, 1)
    resample = gradient_flow(0.0, sigma, 0.0, s.time_end, t_b, s.d, record_times=times, weights=w_b)
    t_plain = sample_inner_products(len(t), s.N, s.d, np.random.default_rng([s.seed, 2]))
    plain = gradient_flow(0.0, sigma, 0.0, s.time_end, t_plain, s.d, record_times=times)
    parts = [
        _rows("gd", gd.time, gd.xi1, gd.xi2, t, w, step=gd.step),
        _rows("flow", overlap.time, overlap.xi1, overlap.xi2, t, w),
        _rows("continuation", cont.time, cont.xi1, cont.xi2, t, w),
        _rows("resample", resample.time, resample.xi1, resample.xi2, t_b, w_b),
        _rows("plain", plain.time, plain.xi1, plain.xi2, t_plain, None),
    ]
    table = pd.concat(parts, ignore_index=True)
    table["sigma"] = sigma
    table["mass"] = np.where(table["source"] == "resample", mass_b, np.where(table["source"] == "plain", 1.0, mass))
    if log:
        log.info("audit done in %.1f s", clock.perf_counter() - started)
    return table
