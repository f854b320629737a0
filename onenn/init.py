"""Initialisation of ``W`` (docs/method.md §4): Assumption 2 and its perturbed and block-confined variants."""

from __future__ import annotations

import torch

from onenn.stream import gaussian_matrix, stream_key

NOISE_BLOCKS = ("all", "label", "other")


def assumption2(d: int, m: int, sigma: float, *, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``W0 = diag(0_{d+m}, −σ)``: (D, D)."""
    W = torch.zeros(d + m + 1, d + m + 1, dtype=dtype)
    W[-1, -1] = -sigma
    return W


def noise_mask(d: int, m: int, noise_blocks: str) -> torch.Tensor:
    """Boolean (D, D) mask of the entries that receive noise: every entry, only the label columns
    ``W12, W22, W32``, or every entry outside them."""
    if noise_blocks not in NOISE_BLOCKS:
        raise ValueError(f"noise_blocks must be one of {', '.join(NOISE_BLOCKS)}; got {noise_blocks!r}")
    D = d + m + 1
    label = torch.zeros(D, D, dtype=torch.bool)
    label[:, d : d + m] = True
    return {"all": torch.ones(D, D, dtype=torch.bool), "label": label, "other": ~label}[noise_blocks]


def initial_weights(
    d: int,
    m: int,
    sigma: float,
    epsilon: float,
    noise_blocks: str,
    seed: int,
    *,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """``W0 + ε·G`` with ``G`` i.i.d. N(0, 1) on the chosen blocks: the stream's normals of the run's
    ``(seed, "initial_weights")`` key (``onenn.stream.gaussian_matrix``, drawn on the CPU by the reference, so a
    seed gives the same start on every device and engine). With ``ε = 0`` no numbers are drawn."""
    if epsilon < 0:
        raise ValueError(f"epsilon (the noise scale) must be >= 0; got {epsilon}")
    W = assumption2(d, m, sigma, dtype=torch.float64)
    if epsilon > 0:
        G = torch.from_numpy(gaussian_matrix(stream_key(seed, "initial_weights"), *W.shape)).double()
        W += epsilon * G * noise_mask(d, m, noise_blocks)
    return W.to(dtype)
