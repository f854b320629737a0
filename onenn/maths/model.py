"""The one-layer softmax-attention model of docs/method.md §1 and its argmax head (the 1-NN target ``i*`` is
``onenn.maths.prompts.nearest_neighbour``).

Prompts are stored as token *rows* (the transpose of the columns of docs/method.md §1):
``x``  (B, N+1, d) inputs, the query last;
``Y``  (B, N, m)   label vectors of the context (simplex codes ``u_c`` with ``m = K``, or scalars with ``m = 1``).
The embedding is ``h_j = [x_j; y_j; 0]`` for ``j <= N`` and ``h_{N+1} = [x_{N+1}; 0_m; 1]``, so ``D = d + m + 1``.
Only the query column of ``H^T W H`` is formed: the model's output needs nothing else.
"""

from __future__ import annotations

import torch


def simplex_code(K: int, *, dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu") -> torch.Tensor:
    """Rows ``u_c = e_c - (1/K) 1_K`` for ``c = 0..K-1``.  # (K, K)"""
    if K < 2:
        raise ValueError(f"K must be >= 2 (the number of classes), got {K}")
    eye = torch.eye(K, dtype=dtype, device=device)
    return eye - 1.0 / K


def label_vectors(classes: torch.Tensor, K: int, *, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Simplex codes of the context classes ``classes`` (B, N) -> (B, N, K)."""
    return simplex_code(K, dtype=dtype, device=classes.device)[classes]


def embed(x: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """The full embedding ``H`` as rows: (B, N+1, D). Used by reference code and tests, not by training."""
    B, n_tokens, _ = x.shape
    m = Y.shape[-1]
    labels = torch.cat([Y, Y.new_zeros(B, 1, m)], dim=1)  # the query's label slot is 0
    last = x.new_zeros(B, n_tokens, 1)
    last[:, -1, 0] = 1.0
    return torch.cat([x, labels, last], dim=-1)


def query_scores(W: torch.Tensor, x: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Scores ``s_j = h_j^T W h_{N+1}`` for ``j = 1..N+1``: (B, N+1)."""
    d, m = x.shape[-1], Y.shape[-1]
    x_query = x[:, -1, :]  # (B, d)
    v = x_query @ W[:, :d].T + W[:, -1]  # W h_{N+1}: (B, D)
    scores = torch.einsum("bjd,bd->bj", x, v[:, :d])  # x-part of every token, query included
    scores[:, :-1] += torch.einsum("bjm,bm->bj", Y, v[:, d : d + m])
    scores[:, -1] += v[:, -1]
    return scores


def forward(W: torch.Tensor, x: torch.Tensor, Y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention weights ``q`` (B, N+1) and the output ``ℓ = Σ_{j<=N} q_j y_j`` (B, m)."""
    q = torch.softmax(query_scores(W, x, Y), dim=-1)
    ell = torch.einsum("bj,bjm->bm", q[:, :-1], Y)
    return q, ell


def predict(ell: torch.Tensor) -> torch.Tensor:
    """The argmax head ``ĉ = argmax_k ℓ_k``."""
    return ell.argmax(dim=-1)
