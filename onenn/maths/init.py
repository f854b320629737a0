"""Initialisation of ``W`` (docs/method.md §4): Assumption 2 and its perturbed and block-confined variants.

Computed in numpy (``initial_array``), so that a training run on the CPU's compiled engine needs no torch;
``initial_weights`` and ``assumption2`` hand the same numbers over as torch tensors."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from onenn.maths.stream import gaussian_matrix, stream_key

if TYPE_CHECKING:
    import torch

NOISE_BLOCKS = ("all", "label", "other")
#: the precisions a run may train in
PRECISIONS = ("float32", "float64")


def assumption2(d: int, m: int, sigma: float, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``W0 = diag(0_{d+m}, −σ)``: (D, D), float64 unless ``dtype`` says otherwise."""
    import torch

    return torch.from_numpy(assumption2_array(d, m, sigma)).to(dtype or torch.float64)


def assumption2_array(d: int, m: int, sigma: float) -> np.ndarray:
    """``W0 = diag(0_{d+m}, −σ)``: (D, D) float64."""
    W = np.zeros((d + m + 1, d + m + 1))
    W[-1, -1] = -sigma
    return W


def noise_mask(d: int, m: int, noise_blocks: str) -> np.ndarray:
    """Boolean (D, D) mask of the entries that receive noise: every entry, only the label columns
    ``W12, W22, W32``, or every entry outside them."""
    if noise_blocks not in NOISE_BLOCKS:
        raise ValueError(f"noise_blocks must be one of {', '.join(NOISE_BLOCKS)}; got {noise_blocks!r}")
    D = d + m + 1
    label = np.zeros((D, D), dtype=bool)
    label[:, d : d + m] = True
    return {"all": np.ones((D, D), dtype=bool), "label": label, "other": ~label}[noise_blocks]


def initial_array(
    d: int, m: int, sigma: float, epsilon: float, noise_blocks: str, seed: int, *, dtype: str = "float64"
) -> np.ndarray:
    """``W0 + ε·G`` with ``G`` i.i.d. N(0, 1) on the chosen blocks: the stream's normals of the run's
    ``(seed, "initial_weights")`` key (``onenn.maths.stream.gaussian_matrix``, drawn on the CPU by the reference, so a
    seed gives the same start on every device and engine), computed in float64 and rounded to ``dtype`` (one of
    ``PRECISIONS``). With ``ε = 0`` no numbers are drawn."""
    if epsilon < 0:
        raise ValueError(f"epsilon (the noise scale) must be >= 0; got {epsilon}")
    if dtype not in PRECISIONS:
        raise ValueError(f"dtype must be one of {', '.join(PRECISIONS)}; got {dtype!r}")
    W = assumption2_array(d, m, sigma)
    if epsilon > 0:
        G = gaussian_matrix(stream_key(seed, "initial_weights"), *W.shape).astype(np.float64)
        W += epsilon * G * noise_mask(d, m, noise_blocks)
    return W.astype(dtype)


def initial_weights(
    d: int,
    m: int,
    sigma: float,
    epsilon: float,
    noise_blocks: str,
    seed: int,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """``initial_array`` as a torch tensor of ``dtype`` (float64 unless it says otherwise)."""
    import torch

    return torch.from_numpy(initial_array(d, m, sigma, epsilon, noise_blocks, seed)).to(dtype or torch.float64)
