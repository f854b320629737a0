"""The reduced-dynamics audit of the binary paper's convergence proof (docs/method.md §7), the reduced loss landscape,
and full-matrix gradient descent against the reduced dynamics (Lemma 1). numpy/scipy only, no torch.

Audit (kind ``audit``), per ``sigma``, at ``d = 8, N = 32`` in the config:

- ``gd``: exact gradient descent on ``(xi1, xi2)`` (docs/method.md §4 update) for ``steps`` steps of size ``lr``, with the
  gradient of the weighted population sample of ``reduced.audit_sample`` (fixed, common to all steps);
- ``flow``: the gradient flow from the same start over the same time window, recorded at GD's times (time
  ``= lr * step``): where the two overlap they must agree to ``O(lr)``;
- ``continuation``: the flow from GD's last point to ``time_end`` (adaptive ODE solver in log-time);
- ``resample``: the flow from the start to ``time_end`` on an independent sample of the same design: its
  distance to ``flow``/``continuation`` is the estimate's own error;
- ``plain``: the same flow on a plain sample of the same size, to show what a naive sample does at large time.

Every row carries ``xi1, xi2``, the ratio ``xi1/xi2`` (against ``7/15``), ``xi2 − xi1``, the loss, its
standard error, and ``loss_log_time = loss * log(time)`` (bounded if the loss is ``O(1/log t)``).
"""

from __future__ import annotations

import logging
import math
import time as clock
from dataclasses import dataclass

import numpy as np
import pandas as pd

from onenn.analysis.tables import normalise_types
from onenn.family import diagnostics
from onenn.pipeline.io import save_table
from onenn.pipeline.settings import Settings
from onenn.theory import reduced as R

SIGMA_RULES = ("theorem1", "lemma12")
SOURCES = ("gd", "flow", "continuation", "resample", "plain")


def resolve_sigma(sigma: float | str, N: int, d: int) -> float:
    """A number, or the threshold of docs/method.md §7 it names: ``theorem1`` (its explicit part) or ``lemma12``."""
    if sigma == "theorem1":
        return R.sigma_threshold_theorem1(N, d)
    if sigma == "lemma12":
        return R.sigma_threshold_lemma12(N, d)
    if isinstance(sigma, (int, float)) and not isinstance(sigma, bool) and math.isfinite(sigma):
        return float(sigma)
    raise ValueError(f"sigma must be a finite number or one of {', '.join(SIGMA_RULES)}; got {sigma!r}")


# --------------------------------------------------------------------------------------------------------
# The audit
# --------------------------------------------------------------------------------------------------------


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
    n_record: int = 60
    seed: int = 0


def _sample(s: AuditSettings, stream: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The weighted sample of stream 0 (main) or 1 (resample)."""
    return R.audit_sample(s.n_plain, s.n_max, s.n_gap, s.N, s.d, np.random.default_rng([s.seed, stream]), s.gap_min)


def _rows(
    source: str,
    time: np.ndarray,
    xi1: np.ndarray,
    xi2: np.ndarray,
    t: np.ndarray,
    w: np.ndarray | None,
    step: np.ndarray | None = None,
) -> pd.DataFrame:
    """Trajectory rows with the loss and its standard error recomputed on the sample ``(t, w)``."""
    est = [R.monte_carlo_estimate(float(a), float(b), t, weights=w) for a, b in zip(xi1, xi2)]
    out = pd.DataFrame(
        {
            "source": source,
            "step": np.full(len(time), -1, dtype=np.int64) if step is None else np.asarray(step, dtype=np.int64),
            "time": np.asarray(time, dtype=np.float64),
            "xi1": xi1,
            "xi2": xi2,
            "loss": [e.loss for e in est],
            "se_loss": [e.se_loss for e in est],
            "grad_xi1": [e.grad_xi1 for e in est],
            "grad_xi2": [e.grad_xi2 for e in est],
        }
    )
    out["ratio"] = out["xi1"] / out["xi2"]
    out["xi2_minus_xi1"] = out["xi2"] - out["xi1"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["loss_log_time"] = np.where(out["time"] > 1, out["loss"] * np.log(out["time"]), np.nan)
    return out


def run_audit(s: AuditSettings, log: logging.Logger | None = None) -> pd.DataFrame:
    """All five trajectories of one audit run, tidy: one row per (source, recorded time)."""
    sigma = resolve_sigma(s.sigma, s.N, s.d)
    t, w, mass = _sample(s, 0)
    if log:
        log.info("sigma=%s -> %.6g; sample of %d prompts, raw mass %.5f", s.sigma, sigma, len(t), mass)
    started = clock.perf_counter()
    gd = R.gradient_descent(
        0.0, sigma, s.lr, s.steps, t, s.d, record_steps=R.log_spaced_steps(s.steps, s.n_record), weights=w
    )
    if log:
        log.info(
            "gd: %d steps in %.1f s; end xi=(%.4g, %.4g)",
            s.steps,
            clock.perf_counter() - started,
            gd.xi1[-1],
            gd.xi2[-1],
        )
    overlap = R.gradient_flow(
        0.0, sigma, 0.0, float(gd.time[-1]), t, s.d, record_times=gd.time, weights=w, rtol=1e-10, atol=1e-12
    )
    time_gd = float(gd.time[-1])
    cont = R.gradient_flow(
        float(gd.xi1[-1]), float(gd.xi2[-1]), time_gd, s.time_end, t, s.d, n_record=s.n_record, weights=w
    )
    times = np.unique(np.concatenate([gd.time, cont.time]))
    t_b, w_b, mass_b = _sample(s, 1)
    resample = R.gradient_flow(0.0, sigma, 0.0, s.time_end, t_b, s.d, record_times=times, weights=w_b)
    t_plain = R.sample_inner_products(len(t), s.N, s.d, np.random.default_rng([s.seed, 2]))
    plain = R.gradient_flow(0.0, sigma, 0.0, s.time_end, t_plain, s.d, record_times=times)
    parts = [
        _rows("gd", gd.time, gd.xi1, gd.xi2, t, w, step=gd.step),
        _rows("flow", overlap.time, overlap.xi1, overlap.xi2, t, w),
        _rows("continuation", cont.time, cont.xi1, cont.xi2, t, w),
        _rows("resample", resample.time, resample.xi1, resample.xi2, t_b, w_b),
        _rows("plain", plain.time, plain.xi1, plain.xi2, t_plain, None),
    ]
    table = pd.concat(parts, ignore_index=True)
    table["sigma_value"] = sigma
    table["mass"] = np.where(table["source"] == "resample", mass_b, np.where(table["source"] == "plain", 1.0, mass))
    if log:
        log.info("audit done in %.1f s", clock.perf_counter() - started)
    return table


def audit_job(settings: dict, *, identity: dict, output: str, log: logging.Logger) -> None:
    """The workflow's audit job: one sigma of one audit experiment, as a Parquet table with its settings."""
    s = AuditSettings.from_dict(settings)
    table = run_audit(s, log)
    info = {**identity, **{k: v for k, v in s.to_dict().items() if k != "sigma"}, "sigma": str(s.sigma)}
    for key, value in info.items():
        table[key] = value
    first = ["experiment", "variant", "sigma", "sigma_value", "source", "step", "time"]
    save_table(output, normalise_types(table[first + [c for c in table.columns if c not in first]]))
    end = table[table["source"] == "continuation"].iloc[-1]
    log.info(
        "end (time %.3g): xi1=%.4g xi2=%.4g ratio=%.4f (7/15=%.4f) loss=%.4g",
        end["time"],
        end["xi1"],
        end["xi2"],
        end["ratio"],
        R.XI_RATIO_BOUND,
        end["loss"],
    )


# --------------------------------------------------------------------------------------------------------
# The landscape
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LandscapeSettings(Settings):
    """The reduced loss on the grid ``xi1_range x xi2_range`` (``grid`` points each way), on a plain sample."""

    WHAT = "landscape settings"

    d: int = 8
    N: int = 32
    xi1_range: tuple[float, float] = (0.0, 15.0)
    xi2_range: tuple[float, float] = (0.0, 15.0)
    grid: int = 61
    prompts: int = 16_384
    seed: int = 0

    @classmethod
    def from_dict(cls, values: dict) -> LandscapeSettings:
        ranges = {k: tuple(values[k]) for k in ("xi1_range", "xi2_range") if k in values}  # YAML gives lists
        return super().from_dict({**values, **ranges})


def landscape(s: LandscapeSettings) -> pd.DataFrame:
    """One row per grid point: ``xi1, xi2``, the binary loss and its standard error."""
    if s.grid < 2:
        raise ValueError(f"grid must be >= 2 points each way, got {s.grid}")
    t = R.sample_inner_products(s.prompts, s.N, s.d, np.random.default_rng(s.seed))
    xi1 = np.linspace(*s.xi1_range, s.grid)
    xi2 = np.linspace(*s.xi2_range, s.grid)
    rows = []
    for a in xi1:
        for b in xi2:
            est = R.monte_carlo_estimate(float(a), float(b), t)
            rows.append({"xi1": float(a), "xi2": float(b), "loss": est.loss, "se_loss": est.se_loss})
    return pd.DataFrame(rows)


def landscape_job(settings: dict, *, experiment: str, output: str, log: logging.Logger) -> None:
    s = LandscapeSettings.from_dict(settings)
    started = clock.perf_counter()
    table = landscape(s)
    table.insert(0, "experiment", experiment)
    for key in ("d", "N", "prompts", "seed"):
        table[key] = getattr(s, key)
    save_table(output, normalise_types(table))
    log.info("landscape: %d points in %.1f s", len(table), clock.perf_counter() - started)


# --------------------------------------------------------------------------------------------------------
# Full-matrix gradient descent (Lemma 1)
# --------------------------------------------------------------------------------------------------------


def full_loss_grad(A: np.ndarray, x: np.ndarray) -> tuple[float, np.ndarray]:
    """The binary loss with the labels integrated out, and its gradient, for the matrix restricted to the
    blocks that can move.

    ``A`` is ``W`` on rows and columns ``(x, last)``, shape (d+1, d+1). The label columns get no gradient
    (docs/method.md §1), and on ``{label rows = 0}`` the label-expected gradient of the label rows is an expectation
    of odd monomials of the zero-mean, symmetric labels, hence 0: full-matrix GD from ``W0`` keeps them 0.
    There, the attention does not depend on the labels, and for labels with ``E y_j y_k = [j = k]`` the
    per-prompt loss is ``f = ½(Σ_j q_j² − 2 q_{i*} + 1)`` (see ``onenn.theory.reduced``), whose score gradient is
    ``q_k (g_k − ḡ)`` with ``g_j = q_j − [j = i*]``, ``g_query = 0``. ``x`` (n, N+1, d), the query last.
    """
    n, _, d = x.shape
    z_query = np.concatenate([x[:, -1], np.ones((n, 1))], axis=1)  # (n, d+1)
    v = z_query @ A.T  # A z_q: (n, d+1)
    scores = np.einsum("bjd,bd->bj", x, v[:, :d])  # x-part of every token, query included
    scores[:, -1] += v[:, d]
    scores -= scores.max(axis=1, keepdims=True)
    q = np.exp(scores)
    q /= q.sum(axis=1, keepdims=True)  # (n, N+1)
    rows = np.arange(n)
    nn = np.argmax(np.einsum("bjd,bd->bj", x[:, :-1], x[:, -1]), axis=1)
    q_star = q[rows, nn]
    r = 1.0 - q_star
    sum_sq = (q[:, :-1] ** 2).sum(axis=1) - q_star**2  # Σ_{j≠i*} q_j²
    loss = 0.5 * (r * r + sum_sq)
    g = q.copy()
    g[:, -1] = 0.0
    g[rows, nn] -= 1.0
    gbar = (q * g).sum(axis=1)
    ds = q * (g - gbar[:, None])  # (n, N+1)
    r_vec = np.concatenate([np.einsum("bj,bjd->bd", ds, x), ds[:, -1:]], axis=1)  # Σ_k ds_k z_k: (n, d+1)
    return float(loss.mean()), r_vec.T @ z_query / n


def embed_active(A: np.ndarray, d: int) -> np.ndarray:
    """The (d+2)x(d+2) binary ``W`` with ``A`` on rows/columns ``(x, last)`` and zero label row and column."""
    keep = np.r_[np.arange(d), d + 1]
    W = np.zeros((d + 2, d + 2))
    W[np.ix_(keep, keep)] = A
    return W


@dataclass(frozen=True)
class FullMatrixSettings(Settings):
    WHAT = "full-matrix settings"

    d: int = 8
    N: int = 32
    sigma: float = 3.0
    lr: float = 0.1
    steps: int = 2000
    prompts: int = 16_384
    n_record: int = 40
    seed: int = 0


def full_matrix_vs_reduced(s: FullMatrixSettings) -> pd.DataFrame:
    """Full-matrix GD and reduced GD from ``W0 = diag(0, −σ)`` on the same prompts, recorded side by side."""
    from onenn.prompts import sphere  # numpy only

    x = sphere(np.random.default_rng(s.seed), (s.prompts, s.N + 1), s.d)
    t = np.einsum("bjd,bd->bj", x[:, :-1], x[:, -1])  # the reduced sample: inner products of the same prompts
    record = R.log_spaced_steps(s.steps, s.n_record)
    reduced = R.gradient_descent(0.0, s.sigma, s.lr, s.steps, t, s.d, record_steps=record)
    A = np.zeros((s.d + 1, s.d + 1))
    A[-1, -1] = -s.sigma
    rows, k = [], 0
    for step in range(s.steps + 1):
        loss, grad = full_loss_grad(A, x)
        if step == record[k]:
            W = embed_active(A, s.d)
            diag = diagnostics(W, s.d, 1)
            rows.append(
                {
                    "step": step,
                    "time": s.lr * step,
                    "loss": loss,
                    "xi1": diag["xi1"],
                    "xi2": diag["xi2"],
                    "dist_family": diag["dist_family_active"],
                    "xi1_reduced": float(reduced.xi1[k]),
                    "xi2_reduced": float(reduced.xi2[k]),
                    "loss_reduced": float(reduced.loss[k]),
                }
            )
            k += 1
            if k == len(record):
                break
        A -= s.lr * grad
    out = pd.DataFrame(rows)
    out["xi_gap"] = np.hypot(out["xi1"] - out["xi1_reduced"], out["xi2"] - out["xi2_reduced"])
    return out


def full_matrix_job(settings: dict, *, identity: dict, output: str, log: logging.Logger) -> None:
    """One variant of a full-matrix experiment: both trajectories with the variant's identity and settings."""
    s = FullMatrixSettings.from_dict(settings)
    started = clock.perf_counter()
    table = full_matrix_vs_reduced(s)
    for key, value in {**identity, **s.to_dict()}.items():
        table[key] = value
    first = ["experiment", "variant", "step"]
    save_table(output, normalise_types(table[first + [c for c in table.columns if c not in first]]))
    log.info(
        "full matrix vs reduced: %d steps in %.1f s; max |xi - xi_reduced| %.3g, max dist to family %.3g",
        s.steps,
        clock.perf_counter() - started,
        table["xi_gap"].max(),
        table["dist_family"].max(),
    )


JOBS = {"audit": audit_job, "full_matrix": full_matrix_job}


def beyond_job(kind: str, settings: dict, *, identity: dict, output: str, log: logging.Logger) -> None:
    """The workflow's per-variant job of an ``audit`` or ``full_matrix`` experiment."""
    if kind not in JOBS:
        raise ValueError(f"kind must be one of {', '.join(JOBS)}; got {kind!r}")
    JOBS[kind](settings, identity=identity, output=output, log=log)
