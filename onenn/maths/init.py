"""Initialisation of ``W`` (docs/method.md §4.1): Assumption 2 and its perturbed and block-confined variants, numpy."""

import numpy as np

from onenn.maths.stream import gaussian_matrix, stream_key

NOISE_BLOCKS = ("all", "label", "other")
PRECISIONS = ("float32", "float64")


def assumption2(d: int, m: int, sigma: float) -> np.ndarray:
    """``W0 = diag(0_{d+m}, −σ)``: (D, D) float64."""
    W = np.zeros((d + m + 1, d + m + 1))
    W[-1, -1] = -sigma
    return W


def initial_weights(
    d: int, m: int, sigma: float, epsilon: float, noise_blocks: str, seed: int, *, dtype: str = "float64"
) -> np.ndarray:
    """``W0 + ε·G`` (§4.1), ``G`` the stream's normals of ``(seed, "initial_weights")``, rounded to ``dtype``."""
    if epsilon < 0:
        raise ValueError(f"epsilon (the noise scale) must be >= 0; got {epsilon}")
    if dtype not in PRECISIONS:
        raise ValueError(f"dtype must be one of {', '.join(PRECISIONS)}; got {dtype!r}")
    W = assumption2(d, m, sigma)
    if epsilon > 0:
        if noise_blocks not in NOISE_BLOCKS:
            raise ValueError(f"noise_blocks must be one of {', '.join(NOISE_BLOCKS)}; got {noise_blocks!r}")
        label = np.zeros(W.shape, dtype=bool)  # the entries that receive noise: all, the label columns, or the others
        label[:, d : d + m] = True
        mask = {"all": np.ones(W.shape, dtype=bool), "label": label, "other": ~label}[noise_blocks]
        W += epsilon * gaussian_matrix(stream_key(seed, "initial_weights"), *W.shape).astype(np.float64) * mask
    return W.astype(dtype)
