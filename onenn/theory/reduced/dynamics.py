"""Gradient descent on the family, exact on a fixed sample, and its gradient flow (docs/method.md §4.3)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from scipy.integrate import solve_ivp

from onenn.maths.steps import log_spaced_steps
from onenn.theory.reduced.loss import loss_grad_prepared, prepare
from onenn.theory.reduced.sampling import check_finite, check_integer

if TYPE_CHECKING:
    from onenn.base.progress import FlowProgressCallback, Progress


class Trajectory(NamedTuple):
    """``xi1, xi2`` and the loss at the recorded times; ``step`` on GD's (``time = lr * step``), ``mass`` (the
    quadrature's weight, 1 up to its error) on the population flow's."""

    time: np.ndarray
    xi1: np.ndarray
    xi2: np.ndarray
    loss: np.ndarray
    step: np.ndarray | None = None
    mass: np.ndarray | None = None


def gradient_descent(
    xi1_0: float,
    xi2_0: float,
    lr: float,
    steps: int,
    t: np.ndarray,
    d: int,
    record_steps: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    progress: Progress | None = None,
) -> Trajectory:
    """Exact full-matrix GD on the reduced loss of the fixed sample ``t``, recorded after the ``record_steps`` updates
    (default ``log_spaced_steps(steps, 60)``); ``progress(step, steps, loss)`` if given."""
    check_finite("xi1_0", xi1_0)
    check_finite("xi2_0", xi2_0)
    check_finite("lr", lr, positive=True)
    check_integer("steps", steps, minimum=0)
    check_integer("d", d, minimum=2)
    rec = np.asarray(log_spaced_steps(steps, 60) if record_steps is None else record_steps)
    increasing = rec.ndim == 1 and rec.size > 0 and np.issubdtype(rec.dtype, np.integer) and np.all(np.diff(rec) > 0)
    if not (increasing and rec[0] >= 0 and rec[-1] <= steps):
        raise ValueError(f"record_steps must be strictly increasing integers in [0, steps={steps}]")
    rec = rec.astype(np.int64)
    prep = prepare(t, weights)
    out = np.empty((3, rec.size))
    xi1, xi2 = float(xi1_0), float(xi2_0)
    k = 0
    for step in range(int(rec[-1]) + 1):
        loss, g1, g2 = loss_grad_prepared(xi1, xi2, prep)
        if step == rec[k]:
            out[:, k] = xi1, xi2, loss
            k += 1
            if k == rec.size:
                break
        xi1, xi2 = xi1 - (lr / d) * g1, xi2 - lr * g2  # full-matrix GD on the family (docs/method.md §4.3)
        if progress is not None:
            progress(step + 1, steps, loss)
    return Trajectory(lr * rec.astype(np.float64), out[0], out[1], out[2], step=rec)


def gradient_flow(
    xi1_0: float,
    xi2_0: float,
    time_start: float,
    time_end: float,
    t: np.ndarray,
    d: int,
    n_eval: int = 50,
    method: str = "LSODA",
    record_times: np.ndarray | None = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    weights: np.ndarray | None = None,
    progress: FlowProgressCallback | None = None,
) -> Trajectory:
    """The gradient flow (method.md §4.3) on the sample, at ``record_times`` (default: ``n_eval`` of ``log_times``)."""
    check_finite("xi1_0", xi1_0)
    check_finite("xi2_0", xi2_0)
    if not (math.isfinite(time_start) and time_start >= 0):
        raise ValueError(f"time_start must be a finite number >= 0, got {time_start!r}")
    if not (math.isfinite(time_end) and time_end > time_start):
        raise ValueError(f"time_end must be finite and > time_start={time_start}, got {time_end!r}")
    check_integer("d", d, minimum=2)
    check_integer("n_eval", n_eval, minimum=2)
    times = log_times(time_start, time_end, n_eval) if record_times is None else record_times
    value = partial(loss_grad_prepared, prep=prepare(t, weights))
    return flow_of(value, xi1_0, xi2_0, time_start, time_end, d, method, times, rtol, atol, progress)


def flow_of(
    value: Callable[[float, float], tuple[float, ...]],
    xi1_0: float,
    xi2_0: float,
    time_start: float,
    time_end: float,
    d: int,
    method: str,
    record_times: np.ndarray,
    rtol: float,
    atol: float,
    progress: FlowProgressCallback | None = None,
    bound: float | None = None,
) -> Trajectory:
    """The flow of ``value = (loss, dL/dxi1, dL/dxi2[, mass])`` at the recorded times and, with ``bound``, where
    ``xi1/xi2`` first rises through it (an event), solved in ``tau = log(1 + time)``: steps roughly even per decade."""
    if method not in ("LSODA", "Radau", "BDF", "RK45", "DOP853"):
        raise ValueError(f"method must be one of 'LSODA', 'Radau', 'BDF', 'RK45', 'DOP853', got {method!r}")
    check_finite("rtol", rtol, positive=True)
    check_finite("atol", atol, positive=True)
    rec = np.asarray(record_times, dtype=float)
    if rec.ndim != 1 or rec.size == 0 or np.any(np.diff(rec) <= 0) or rec[0] < time_start or rec[-1] > time_end:
        raise ValueError(
            f"record_times must be strictly increasing times in [time_start={time_start}, time_end={time_end}]"
        )
    tau_span = (math.log1p(time_start), math.log1p(time_end))

    def rhs(tau: float, y: np.ndarray) -> np.ndarray:
        g1, g2 = value(float(y[0]), float(y[1]))[1:3]
        if progress is not None:  # below 1: the end is reported once, after the solver
            share = min((tau - tau_span[0]) / (tau_span[1] - tau_span[0]), 0.999)
            progress(math.expm1(tau), time_end, share)
        return -math.exp(tau) * np.array([g1 / d, g2])  # exp(tau) = 1 + time

    tau_record = np.clip(np.log1p(rec), *tau_span)  # clip: log1p(expm1(x)) may miss x by an ulp

    def rises(tau: float, y: np.ndarray) -> float:  # through 0 where xi1/xi2 rises through bound (xi2 > 0)
        return y[0] - bound * y[1]

    rises.direction = 1.0
    events = None if bound is None else rises
    sol = solve_ivp(
        rhs, tau_span, [xi1_0, xi2_0], method=method, t_eval=tau_record, rtol=rtol, atol=atol, events=events
    )
    if not sol.success:
        raise RuntimeError(f"gradient_flow: solve_ivp ({method}) failed: {sol.message}")
    if progress is not None:
        progress(time_end, time_end, 1.0)
    xi = sol.y
    if (
        bound is not None
        and sol.t_events[0].size
        and not np.isclose(rec, t_cross := math.expm1(sol.t_events[0][0]), rtol=1e-9, atol=0).any()
    ):
        at = int(np.searchsorted(rec, t_cross))  # the crossing's row, in time order
        rec, xi = np.insert(rec, at, t_cross), np.insert(xi, at, sol.y_events[0][0], axis=1)
    values = np.array([value(float(a), float(b)) for a, b in zip(xi[0], xi[1], strict=True)])
    return Trajectory(rec, xi[0], xi[1], values[:, 0], mass=values[:, 3] if values.shape[1] > 3 else None)


def log_times(time_start: float, time_end: float, n: int, *, decades: bool = False) -> np.ndarray:
    """``n`` increasing times from ``time_start`` to ``time_end``: log-spaced in ``1 + time`` (the flows' default
    record); with ``decades``, log-spaced in ``time`` (``time_start > 0``) and every power of ten between."""
    if decades:
        powers = 10.0 ** np.arange(math.ceil(math.log10(time_start)), math.floor(math.log10(time_end)) + 1)
        return np.unique(np.concatenate([np.geomspace(time_start, time_end, n), powers]))
    times = np.expm1(np.linspace(math.log1p(time_start), math.log1p(time_end), n))
    times[0], times[-1] = time_start, time_end  # exact endpoints despite rounding in expm1(log1p(.))
    return times
