"""The two test distributions of docs/method.md §3, drawn with numpy (no torch, so dataset jobs start fast).

A test set is ``x`` (n, N+1, d) with the query last, ``c`` (n, N) context classes and ``nn`` (n,) the index
``i*`` of the query's nearest neighbour.
"""

from __future__ import annotations

import zlib

import numpy as np

SPLITS = ("uniform", "separated")


def sphere(rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """I.i.d. points uniform on ``S^{d−1}``: shape + (d,)."""
    z = rng.standard_normal((*shape, d))
    return z / np.linalg.norm(z, axis=-1, keepdims=True)


def uniform_prompts(n: int, d: int, N: int, K: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Assumption 1: inputs uniform on the sphere, classes uniform and independent of them."""
    x = sphere(rng, (n, N + 1), d)
    c = rng.integers(0, K, size=(n, N))
    nn = np.argmax(np.einsum("bjd,bd->bj", x[:, :-1], x[:, -1]), axis=1)
    return {"x": x, "c": c, "nn": nn}


def separated_prompts(
    n: int, d: int, N: int, K: int, delta: float, rng: np.random.Generator, max_rounds: int = 10_000
) -> dict[str, np.ndarray]:
    """The separated construction with margin ``δ*``: the query is a copy of a uniformly chosen ``x_{i*}``, and
    every context point of another class is redrawn until it is at least ``δ*`` farther, in squared
    distance, from the query than ``x_{i*}`` is (which is 0 away)."""
    if not 0.0 < delta < 4.0:
        raise ValueError(f"delta (the margin δ*) must lie in (0, 4) for points on the sphere; got {delta}")
    prompts = uniform_prompts(n, d, N, K, rng)
    x, c = prompts["x"], prompts["c"]
    nn = rng.integers(0, N, size=n)
    rows = np.arange(n)
    x[:, -1] = x[rows, nn]
    other_class = c != c[rows, nn][:, None]  # (n, N)
    for _ in range(max_rounds):
        sq_dist = ((x[:, :-1] - x[:, -1:]) ** 2).sum(-1)
        bad = other_class & (sq_dist < delta)
        if not bad.any():
            return {"x": x, "c": c, "nn": nn}
        x[:, :-1][bad] = sphere(rng, (int(bad.sum()),), d)
    raise RuntimeError(f"separated sampler did not reach the margin delta={delta} in {max_rounds} rounds")


def make_test_set(split: str, n: int, d: int, N: int, K: int, delta: float | None, seed: int) -> dict[str, np.ndarray]:
    """One test set, from a generator seeded by ``seed`` and the set's own parameters (so two sets never
    share draws, and the same parameters always give the same set)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")
    key = zlib.crc32(f"{split}|{n}|{d}|{N}|{K}|{delta}".encode())
    rng = np.random.default_rng([seed, key])
    if split == "uniform":
        return uniform_prompts(n, d, N, K, rng)
    return separated_prompts(n, d, N, K, float(delta), rng)
