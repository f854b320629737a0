"""The model of docs/method.md §1-§2 in numpy, float64: THE reference every port is held to. ``x`` (B, N+1, d), the
query last; ``Y`` (B, N, m) the context's labels; only the query column of ``H^T W H`` is formed."""

import numpy as np


def simplex_code(K: int) -> np.ndarray:
    """Rows ``u_c = e_c - (1/K) 1_K`` for ``c = 0..K-1``: (K, K)."""
    if K < 2:
        raise ValueError(f"K must be >= 2 (the number of classes), got {K}")
    return np.eye(K) - 1.0 / K


def embed(x: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The embedding ``H`` as rows ``h_j = [x_j; y_j; 0]``, ``h_{N+1} = [x_{N+1}; 0; 1]``: (B, N+1, D)."""
    B, T, d = x.shape
    H = np.zeros((B, T, d + Y.shape[-1] + 1), dtype=np.result_type(x, Y))
    H[:, :, :d] = x
    H[:, :-1, d:-1] = Y
    H[:, -1, -1] = 1.0
    return H


def forward(W: np.ndarray, x: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Attention weights ``q`` (B, N+1) and the output ``ℓ = Σ_{j<=N} q_j y_j`` (B, m)."""
    d, m = x.shape[-1], Y.shape[-1]
    x_query = np.ascontiguousarray(x[:, -1, :])  # (B, d)
    v = x_query @ np.ascontiguousarray(W[:, :d].T) + W[:, -1]  # W h_{N+1}: (B, D); contiguous: BLAS
    scores = (x @ v[:, :d, None])[..., 0]  # s_j = h_j^T W h_{N+1}, x-part of every token: (B, N+1)
    scores[:, :-1] += (Y @ v[:, d : d + m, None])[..., 0]
    scores[:, -1] += v[:, -1]
    q = np.exp(scores - scores.max(axis=-1, keepdims=True))
    q /= q.sum(axis=-1, keepdims=True)
    # einsum sums over j in order: at xi1 = 0 classes with equal counts tie up to rounding, broken in this order
    ell = np.einsum("bj,bjm->bm", q[:, :-1], Y)  # (B, m)
    return q, ell


def weight_gradient(x: np.ndarray, Y: np.ndarray, q: np.ndarray, ell: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Mean over the batch of ``∂loss/∂W = r h_{N+1}^T``, ``r = Σ_j q_j (⟨y_j, g⟩ − ⟨ℓ, g⟩) h_j``, ``g = ∂loss/∂ℓ``
    (§2.2): (D, D), label columns exactly 0."""
    B, _, d = x.shape
    a = np.zeros_like(q)
    a[:, :-1] = (Y @ g[:, :, None])[..., 0]  # ⟨y_j, g⟩
    ds = q * (a - (ell * g).sum(-1, keepdims=True))  # ∂loss/∂s_j: (B, N+1)
    r = (ds[:, None, :] @ embed(x, Y))[:, 0]  # (B, D)
    grad = np.zeros((r.shape[1], r.shape[1]))
    grad[:, :d] = r.T @ x[:, -1, :] / B
    grad[:, -1] = r.sum(0) / B
    return grad
