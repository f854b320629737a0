"""Experiment 2, the scaling identity (docs/method.md §4 Lemma 2, §6): ``L_MC = ((K−1)/K)·L_bin`` on the family,
both losses on the same sampled inputs, their ratio with a delta-method interval. No training and no torch."""

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from onenn.base.columns import normalise_types
from onenn.maths.family import family_matrix
from onenn.maths.losses import square
from onenn.maths.model import forward, simplex_code
from onenn.maths.prompts import draw_labels, nearest_neighbour, seeded_generator, sphere

#: prompts drawn at a time: bounds the memory of a point (8192 × 17 × 8 float64 ≈ 9 MB)
CHUNK = 8192


@dataclass(frozen=True)
class Point:
    """One estimate of the ratio: a panel of the figure, the family parameters, K and the sample size."""

    panel: str
    xi1: float
    xi2: float
    K: int
    prompts: int


def points(panels: dict[str, dict[str, Any]]) -> list[Point]:
    """Every ``(panel, ξ1, ξ2, K)`` of the config's ``panels`` ``{xi: [[ξ1, ξ2], ...], K: [...], prompts: n}``."""
    out = []
    for panel, spec in panels.items():
        if missing := sorted({"xi", "K", "prompts"} - set(spec)):
            raise ValueError(f"panels.{panel} needs the keys xi, K and prompts; missing {missing}")
        for pair in spec["xi"]:
            if len(pair) != 2:
                raise ValueError(f"panels.{panel}.xi must hold [xi1, xi2] pairs; got {pair!r}")
            for K in spec["K"]:
                if int(K) < 2:
                    raise ValueError(f"panels.{panel}.K must hold integers >= 2; got {K!r}")
                out.append(Point(panel, float(pair[0]), float(pair[1]), int(K), int(spec["prompts"])))
    return out


def square_losses(W: np.ndarray, x: np.ndarray, Y: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Per-prompt ``½‖ℓ − y_{i*}‖²`` of the model (``onenn.maths.model.forward``): (n,)."""
    return square(forward(W, x, Y)[1], target)[0]


def paired_losses(
    xi1: float, xi2: float, K: int, prompts: int, d: int, N: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Per-prompt multiclass and binary square losses on the same ``prompts`` sampled inputs: two arrays (prompts,)."""
    codes = simplex_code(K)  # row k is u_k
    W_mc, W_bin = family_matrix(xi1, xi2, d, K), family_matrix(xi1, xi2, d, 1)
    mc, binary = np.empty(prompts), np.empty(prompts)
    for lo in range(0, prompts, CHUNK):
        b = min(CHUNK, prompts - lo)
        x = sphere(rng, (b, N + 1), d)
        classes = rng.integers(0, K, size=(b, N))
        y = draw_labels(rng, (b, N, 1), "rademacher")
        nn = nearest_neighbour(x)
        rows = np.arange(b)
        mc[lo : lo + b] = square_losses(W_mc, x, codes[classes], codes[classes[rows, nn]])
        binary[lo : lo + b] = square_losses(W_bin, x, y, y[rows, nn])
    return mc, binary


def ratio_estimate(a: np.ndarray, b: np.ndarray, level: float) -> dict[str, float]:
    """``mean(a) / mean(b)`` for paired samples, its delta-method standard error
    ``se² = (var a − 2R·cov(a, b) + R²·var b) / (n·mean(b)²)`` and the ``level`` interval."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"ci_level must lie in (0, 1); got {level}")
    n = len(a)
    if n < 2 or len(b) != n:
        raise ValueError(f"need two paired samples of the same size >= 2; got {len(a)} and {len(b)}")
    mean_a, mean_b = float(a.mean()), float(b.mean())
    ratio = mean_a / mean_b
    cov = np.cov(a, b, ddof=1)
    se = math.sqrt(max(cov[0, 0] - 2 * ratio * cov[0, 1] + ratio**2 * cov[1, 1], 0.0) / (n * mean_b**2))
    z = NormalDist().inv_cdf(0.5 + level / 2)
    se_a, se_b = math.sqrt(cov[0, 0] / n), math.sqrt(cov[1, 1] / n)
    losses = {"L_MC": mean_a, "L_MC_se": se_a, "L_bin": mean_b, "L_bin_se": se_b}
    return losses | {"ratio": ratio, "ratio_se": se, "ratio_lower": ratio - z * se, "ratio_upper": ratio + z * se}


#: what the columns of ``scaling_table`` mean (``d``, ``N``, ``seed``, ``ci_level`` are its settings)
DESCRIPTIONS = {
    "panel": "the scaling identity's figure panel (a key of its `panels`)",
    "xi1": "ξ1 of the point `W = diag{ξ1·I, 0, −ξ2}` on the family",
    "xi2": "ξ2 of that point",
    "K": "number of classes `K` of the multiclass loss",
    "prompts": "prompts sampled at the point (the panel's `prompts`)",
    "L_MC": "the multiclass square loss at the point, mean over the prompts (simplex codes, uniform classes)",
    "L_MC_se": "its standard error over the prompts",
    "L_bin": "the binary square loss on the same prompts (independent uniform ±1 labels)",
    "L_bin_se": "its standard error over the prompts",
    "ratio": "`L_MC / L_bin`",
    "ratio_se": "its delta-method standard error, from the covariance of the paired per-prompt losses",
    "ratio_lower": "lower end of its interval `ratio − z·ratio_se` at `ci_level`",
    "ratio_upper": "upper end of that interval",
    "reference": "Lemma 2's prediction `(K−1)/K`",
}


def scaling_table(settings: dict[str, Any], experiment: str = "scaling_identity") -> pd.DataFrame:
    """One row per point: both losses, the ratio with its interval, and the prediction ``(K−1)/K`` (``reference``)."""
    d, N, seed, level = int(settings["d"]), int(settings["N"]), int(settings["seed"]), float(settings["ci_level"])
    rows = []
    for p in points(settings["panels"]):
        rng = seeded_generator(seed, "scaling", p.panel, p.xi1, p.xi2, p.K, p.prompts, d, N)  # one per point
        mc, binary = paired_losses(p.xi1, p.xi2, p.K, p.prompts, d, N, rng)
        estimate = ratio_estimate(mc, binary, level) | {"ci_level": level, "reference": (p.K - 1) / p.K}
        rows.append({"experiment": experiment, **vars(p), "d": d, "N": N, "seed": seed, **estimate})
    return normalise_types(pd.DataFrame(rows))
