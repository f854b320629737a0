"""Slow, literal implementations of docs/method.md §1 used as independent references by the tests: the full
embedding H with tokens as columns, the whole matrix H^T W H, loops over prompts."""

from __future__ import annotations

import numpy as np


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
