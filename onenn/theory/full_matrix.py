"""Full-matrix gradient descent against the reduced dynamics (Lemma 1, docs/method.md §7): from ``W0`` the binary
model's full-matrix GD stays on the family and follows the reduced GD. numpy only, no torch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from onenn.base.settings import Settings
from onenn.maths.family import diagnostics
from onenn.maths.prompts import nearest_neighbour, sphere
from onenn.maths.steps import log_spaced_steps
from onenn.maths.stream import numpy_generator
from onenn.theory.reduced.dynamics import gradient_descent


def full_loss_grad(A: np.ndarray, x: np.ndarray) -> tuple[float, np.ndarray]:
    """The binary loss with the labels integrated out and its gradient in ``A``, ``W`` on rows and columns ``(x,
    last)`` (the label rows stay 0 under GD from ``W0``): the numpy definition. ``x`` (n, N+1, d), the query last;
    per prompt ``f = 1/2 (sum_j q_j^2 - 2 q_{i*} + 1)``, score gradient ``q_k (g_k - gbar)``, ``g_j = q_j - [j = i*]``."""
    prompts, _, d = x.shape
    z_query = np.concatenate([x[:, -1], np.ones((prompts, 1))], axis=1)  # (n, d+1)
    v = z_query @ A.T  # A z_q: (n, d+1)
    scores = np.einsum("bjd,bd->bj", x, v[:, :d])  # x-part of every token, query included
    scores[:, -1] += v[:, d]
    scores -= scores.max(axis=1, keepdims=True)
    q = np.exp(scores)
    q /= q.sum(axis=1, keepdims=True)  # (n, N+1)
    rows = np.arange(prompts)
    nn = nearest_neighbour(x)
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
    return float(loss.mean()), r_vec.T @ z_query / prompts


def compiled_loss_grad(x: np.ndarray) -> Callable[..., tuple[float, np.ndarray]]:
    """``full_loss_grad`` on fixed prompts ``x`` by its compiled port: ``(A, with_loss=True) -> (loss, gradient)``,
    the loss NaN without ``with_loss``."""
    from onenn.theory.reduced.compiled import full_loss_grad as kernel  # numba: imported where it is used

    x = np.ascontiguousarray(x, dtype=np.float64)  # (n, N+1, d), the query last
    z_query = np.concatenate([x[:, -1], np.ones((x.shape[0], 1))], axis=1)  # (n, d+1)
    nn = np.ascontiguousarray(nearest_neighbour(x), dtype=np.int64)  # i*_b

    def call(A: np.ndarray, with_loss: bool = True) -> tuple[float, np.ndarray]:
        grad = np.empty((x.shape[2] + 1, x.shape[2] + 1))
        return float(kernel(np.ascontiguousarray(A, dtype=np.float64), x, z_query, nn, with_loss, grad)), grad

    return call


def embed_active(A: np.ndarray, d: int) -> np.ndarray:
    """The (d+2)x(d+2) binary ``W`` with ``A`` on rows/columns ``(x, last)`` and zero label row and column."""
    keep = np.r_[np.arange(d), d + 1]
    W = np.zeros((d + 2, d + 2))
    W[np.ix_(keep, keep)] = A
    return W


@dataclass(frozen=True)
class FullMatrixSettings(Settings, schema="full_matrix"):
    WHAT = "full-matrix settings"

    d: int
    N: int
    sigma: float
    lr: float
    steps: int
    prompts: int
    n_eval: int
    seed: int = 0


#: what the columns of ``full_matrix_vs_reduced`` mean
DESCRIPTIONS = {
    "step": "the GD step (both trajectories)",
    "time": "`lr · step`",
    "train_loss": "the loss of full-matrix GD on the fixed prompts",
    "xi1": "ξ1 of the Frobenius projection of the full-matrix `W` onto the family",
    "xi2": "ξ2 of that projection",
    "dist_family_active": "Frobenius distance of `W` to the family over the blocks that can move",
    "xi1_reduced": "ξ1 of reduced GD on the same prompts",
    "xi2_reduced": "ξ2 of reduced GD",
    "train_loss_reduced": "the loss of reduced GD on the same prompts",
    "xi_gap": "`‖(ξ1, ξ2) − (ξ1, ξ2)_reduced‖`: how far the two trajectories are apart",
}


def full_matrix_vs_reduced(s: FullMatrixSettings) -> pd.DataFrame:
    """Full-matrix GD and reduced GD from ``W0 = diag(0, −σ)`` on the same prompts, side by side (``DESCRIPTIONS``)."""
    x = sphere(numpy_generator(s.seed, "full_matrix"), (s.prompts, s.N + 1), s.d)
    t = np.einsum("bjd,bd->bj", x[:, :-1], x[:, -1])  # the reduced sample: inner products of the same prompts
    record = log_spaced_steps(s.steps, s.n_eval)
    reduced = gradient_descent(0.0, s.sigma, s.lr, s.steps, t, s.d, record_steps=record)
    A = np.zeros((s.d + 1, s.d + 1))
    A[-1, -1] = -s.sigma
    loss_grad = compiled_loss_grad(x)
    rows, k = [], 0
    for step in range(s.steps + 1):
        loss, grad = loss_grad(A, with_loss=step == record[k])
        if step == record[k]:
            diag = diagnostics(embed_active(A, s.d), s.d, 1)
            row = {"step": step, "time": s.lr * step, "train_loss": loss}
            row |= {key: diag[key] for key in ("xi1", "xi2", "dist_family_active")}
            row |= {"xi1_reduced": float(reduced.xi1[k]), "xi2_reduced": float(reduced.xi2[k])}
            rows.append(row | {"train_loss_reduced": float(reduced.loss[k])})
            k += 1
            if k == len(record):
                break
        A -= s.lr * grad
    out = pd.DataFrame(rows)
    out["xi_gap"] = np.hypot(out["xi1"] - out["xi1_reduced"], out["xi2"] - out["xi2_reduced"])
    return out
