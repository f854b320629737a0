"""The prompt distributions of docs/method.md §3, multiclass and binary, drawn with numpy (no torch, so the jobs
that draw prompt sets start fast).

A multiclass set is ``x`` (n, N+1, d) with the query last, ``classes`` (n, N) the context classes and ``nn`` (n,) the index
``i*`` of the query's nearest neighbour; a binary set has scalar labels ``y`` (n, N) instead of ``classes``.
"""

from __future__ import annotations

import numpy as np

from onenn.maths.stream import instance_of, numpy_generator

#: the multiclass test sets (as onenn.base.columns names them: the mathematics does not import the foundation)
TEST_SETS = ("uniform", "separated")
#: the binary prompt sets: the fixed training set (test set ``train``: evaluated like a test set) and the two test sets
BINARY_TEST_SETS = ("train", "uniform", "separated")
#: the binary label distributions
LABELS = ("gaussian", "rademacher")
#: the arrays of a multiclass prompt set and of a binary one, as its file stores them: the inputs, the labels and
#: the 1-NN index (the loader, onenn.jobs.inputs.load_prompt_set, checks for these names)
SET_ARRAYS = ("x", "classes", "nn")
BINARY_SET_ARRAYS = ("x", "y", "nn")


def sphere(rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """I.i.d. points uniform on ``S^{d−1}``: shape + (d,)."""
    z = rng.standard_normal((*shape, d))
    return z / np.linalg.norm(z, axis=-1, keepdims=True)


def nearest_neighbour(x):
    """``i* = argmin_j ‖x_{N+1} − x_j‖`` over the context, (n,), for ``x`` (n, N+1, d) with the query last: on
    the sphere, the largest inner product ``⟨x_j, x_{N+1}⟩`` (the first on ties).

    ``x`` is a numpy array (the prompt sets) or a torch tensor (minibatches drawn in torch); the arithmetic is
    the same einsum in both."""
    if isinstance(x, np.ndarray):
        einsum = np.einsum
    else:
        import torch  # a tensor: torch is loaded already; the numpy callers never import it

        einsum = torch.einsum
    return einsum("bjd,bd->bj", x[:, :-1], x[:, -1]).argmax(1)


def draw_labels(rng: np.random.Generator, shape: tuple[int, ...], labels: str) -> np.ndarray:
    """Zero-mean, unit-variance scalar labels: N(0, 1) (``gaussian``) or uniform ±1 (``rademacher``)."""
    if labels == "gaussian":
        return rng.standard_normal(shape)
    if labels == "rademacher":
        return rng.choice(np.array([-1.0, 1.0]), size=shape)
    raise ValueError(f"labels must be one of {', '.join(LABELS)}; got {labels!r}")


def uniform_prompts(prompts: int, d: int, N: int, K: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Assumption 1: inputs uniform on the sphere, classes uniform and independent of them."""
    x = sphere(rng, (prompts, N + 1), d)
    classes = rng.integers(0, K, size=(prompts, N))
    return {"x": x, "classes": classes, "nn": nearest_neighbour(x)}


def binary_prompts(prompts: int, d: int, N: int, labels: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Assumption 1 with scalar labels: inputs uniform on the sphere, labels independent of them."""
    x = sphere(rng, (prompts, N + 1), d)
    y = draw_labels(rng, (prompts, N), labels)
    return {"x": x, "y": y, "nn": nearest_neighbour(x)}


def separate(
    x: np.ndarray, classes: np.ndarray | None, delta: float, rng: np.random.Generator, max_rounds: int = 10_000
) -> np.ndarray:
    """The separated construction with margin ``δ*``, in place on ``x`` (n, N+1, d); returns ``nn`` (n,).

    The query becomes a copy of a uniformly chosen context point ``x_{i*}``, and every context point of another
    class than ``c_{i*}`` is redrawn until it is at least ``δ*`` farther, in squared distance, from the query
    than ``x_{i*}`` is (which is 0 away). ``classes`` (n, N) are the classes; ``None`` (real-valued labels, no
    classes) makes every other context point count, as in the binary paper's Appendix B.
    """
    if not 0.0 < delta < 4.0:
        raise ValueError(f"delta (the margin δ*) must lie in (0, 4) for points on the sphere; got {delta}")
    prompts, N, d = x.shape[0], x.shape[1] - 1, x.shape[2]
    nn = rng.integers(0, N, size=prompts)
    rows = np.arange(prompts)
    x[:, -1] = x[rows, nn]
    # no classes: each point is a group of its own
    group = np.broadcast_to(np.arange(N), (prompts, N)) if classes is None else classes
    keep_away = group != group[rows, nn][:, None]  # (n, N)
    for _ in range(max_rounds):
        sq_dist = ((x[:, :-1] - x[:, -1:]) ** 2).sum(-1)
        bad = keep_away & (sq_dist < delta)
        if not bad.any():
            return nn
        x[:, :-1][bad] = sphere(rng, (int(bad.sum()),), d)
    raise RuntimeError(f"separated sampler did not reach the margin delta={delta} in {max_rounds} rounds")


def separated_prompts(
    prompts: int, d: int, N: int, K: int, delta: float, rng: np.random.Generator, max_rounds: int = 10_000
) -> dict[str, np.ndarray]:
    """Uniform prompts made separated with margin ``δ*`` (``separate``): the multiclass separated test set."""
    drawn = uniform_prompts(prompts, d, N, K, rng)
    nn = separate(drawn["x"], drawn["classes"], delta, rng, max_rounds)
    return {"x": drawn["x"], "classes": drawn["classes"], "nn": nn}


def binary_separated_prompts(
    prompts: int, d: int, N: int, labels: str, delta: float, rng: np.random.Generator, max_rounds: int = 10_000
) -> dict[str, np.ndarray]:
    """Binary prompts made separated with margin ``δ*`` (``separate`` without classes: every other context
    point counts)."""
    drawn = binary_prompts(prompts, d, N, labels, rng)
    nn = separate(drawn["x"], None, delta, rng, max_rounds)
    return {"x": drawn["x"], "y": drawn["y"], "nn": nn}


def seeded_generator(seed: int, purpose: str, *parts: object) -> np.random.Generator:
    """A generator of its own for every set of parameters: the stream of ``(seed, purpose)`` whose instance is a
    hash of ``parts`` (``onenn.maths.stream.numpy_generator``, ``instance_of``), so the same parameters always give the
    same draws and two sets never share draws."""
    return numpy_generator(seed, purpose, instance_of(*parts))


def make_test_set(
    test_set: str, test_size: int, d: int, N: int, K: int, delta: float | None, seed: int
) -> dict[str, np.ndarray]:
    """One multiclass test set, from a generator seeded by ``seed`` and the set's own parameters."""
    if test_set not in TEST_SETS:
        raise ValueError(f"test_set must be one of {', '.join(TEST_SETS)}; got {test_set!r}")
    rng = seeded_generator(seed, "test_set", test_set, test_size, d, N, K, delta)
    if test_set == "uniform":
        return uniform_prompts(test_size, d, N, K, rng)
    return separated_prompts(test_size, d, N, K, float(delta), rng)


def make_binary_set(
    test_set: str, prompts: int, d: int, N: int, labels: str, delta: float | None, seed: int
) -> dict[str, np.ndarray]:
    """One binary prompt set (the fixed training set, or a test set), from a generator seeded by ``seed`` and
    the set's own parameters."""
    if test_set not in BINARY_TEST_SETS:
        raise ValueError(f"test_set must be one of {', '.join(BINARY_TEST_SETS)}; got {test_set!r}")
    rng = seeded_generator(seed, "binary_set", "binary", test_set, prompts, d, N, labels, delta)
    if test_set == "separated":
        return binary_separated_prompts(prompts, d, N, labels, float(delta), rng)
    return binary_prompts(prompts, d, N, labels, rng)
