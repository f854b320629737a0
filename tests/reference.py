"""Slow, literal implementations of docs/method.md §1 used as independent references by the tests: the full
embedding H with tokens as columns, the whole matrix H^T W H, loops over prompts."""

from __future__ import annotations

import numpy as np

from onenn.maths.prompts import nearest_neighbour


def simplex(K: int) -> np.ndarray:
    return np.eye(K) - 1.0 / K


def embedding(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """H (D, N+1) for one prompt: x (N+1, d), labels (N, m)."""
    n_tokens, d = x.shape
    m = labels.shape[1]
    H = np.zeros((d + m + 1, n_tokens))
    H[:d] = x.T
    H[d : d + m, :-1] = labels.T
    H[-1, -1] = 1.0
    return H


def output(W: np.ndarray, x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The label block of the query column of H softmax(H^T W H), softmax over each column."""
    H = embedding(x, labels)
    S = H.T @ W @ H
    P = np.exp(S - S.max(axis=0, keepdims=True))
    P /= P.sum(axis=0, keepdims=True)
    d = x.shape[1]
    m = labels.shape[1]
    return (H @ P)[d : d + m, -1]


def central_differences(loss, W, h: float):
    """The gradient of the scalar ``loss`` at the matrix ``W`` (numpy or torch) by central differences,
    entry by entry: (loss(W + h E_ij) − loss(W − h E_ij)) / 2h, as a numpy array."""
    numeric = np.zeros(tuple(W.shape))
    for i in range(W.shape[0]):
        for j in range(W.shape[1]):
            E = W * 0
            E[i, j] = h
            numeric[i, j] = (float(loss(W + E)) - float(loss(W - E))) / (2 * h)
    return numeric


def full_loss_grad(A: np.ndarray, x: np.ndarray) -> tuple[float, np.ndarray]:
    """The binary loss with the labels integrated out and its gradient in ``A``, ``W`` on rows and columns ``(x,
    last)`` (the label rows stay 0 under GD from ``W0``; docs/method.md §4.3); held to ``output`` in test_binary.py.
    ``x`` (n, N+1, d), the query last; per prompt ``f = 1/2 (sum_j q_j^2 - 2 q_{i*} + 1)``, score gradient
    ``q_k (g_k - gbar)``, ``g_j = q_j - [j = i*]``."""
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


def embed_active(A: np.ndarray, d: int) -> np.ndarray:
    """The (d+2)x(d+2) binary ``W`` with ``A`` on rows/columns ``(x, last)`` and zero label row and column."""
    keep = np.r_[np.arange(d), d + 1]
    W = np.zeros((d + 2, d + 2))
    W[np.ix_(keep, keep)] = A
    return W
