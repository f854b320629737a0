"""The analytic gradient of a minibatch loss with respect to the whole ``D×D`` matrix ``W`` (docs/method.md §4).

For one prompt with ``g = ∂loss/∂ℓ``: ``∂loss/∂s_j = q_j(⟨y_j, g⟩ − ⟨ℓ, g⟩)`` (the query's label is 0) and
``∂loss/∂W = r h_{N+1}^T`` with ``r = Σ_j ∂loss/∂s_j h_j``. Since ``h_{N+1} = [x_{N+1}; 0; 1]``, only the
``x``-columns and the last column of the gradient are non-zero: the label columns get exactly 0.
"""

from __future__ import annotations

import torch


def score_gradient(q: torch.Tensor, ell: torch.Tensor, Y: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """``∂loss/∂s_j`` for every token, (B, N+1)."""
    ell_g = (ell * g).sum(-1, keepdim=True)  # (B, 1)
    y_g = torch.einsum("bjm,bm->bj", Y, g)  # (B, N)
    y_g = torch.cat([y_g, y_g.new_zeros(y_g.shape[0], 1)], dim=1)  # the query's label slot is 0
    return q * (y_g - ell_g)


def weight_gradient(
    x: torch.Tensor, Y: torch.Tensor, q: torch.Tensor, ell: torch.Tensor, g: torch.Tensor
) -> torch.Tensor:
    """Mean over the batch of ``∂loss/∂W`` given ``g = ∂loss/∂ℓ``: (D, D)."""
    B, _, d = x.shape
    m = Y.shape[-1]
    ds = score_gradient(q, ell, Y, g)  # (B, N+1)
    r = torch.cat(
        [
            torch.einsum("bj,bjd->bd", ds, x),  # x-block of Σ_j ds_j h_j
            torch.einsum("bj,bjm->bm", ds[:, :-1], Y),  # label block
            ds[:, -1:],  # the query's indicator coordinate
        ],
        dim=1,
    )  # (B, D)
    grad = r.new_zeros(d + m + 1, d + m + 1)
    grad[:, :d] = r.T @ x[:, -1, :] / B
    grad[:, -1] = r.sum(0) / B
    return grad
