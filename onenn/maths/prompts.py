"""The prompt distributions of docs/method.md §3 in numpy: a set is ``x`` (n, N+1, d) with the query last, the context
``classes`` (n, N) (binary: scalar labels ``y``) and ``nn`` (n,) the query's nearest neighbour ``i*``."""

import numpy as np

from onenn.maths.stream import instance_of, numpy_generator

#: the multiclass test sets (as onenn.base.columns names them: the mathematics does not import the foundation)
TEST_SETS = ("uniform", "separated")
#: the binary prompt sets: the fixed training set (test set ``train``: evaluated like a test set) and the two test sets
BINARY_TEST_SETS = ("train", "uniform", "separated")
LABELS = ("gaussian", "rademacher")
#: the arrays of a multiclass and of a binary prompt set's file (onenn.jobs.inputs.load_prompt_set checks them)
SET_ARRAYS = ("x", "classes", "nn")
BINARY_SET_ARRAYS = ("x", "y", "nn")
#: the draws ``separate`` gives a context point, and the chance that a set fails ``largest_delta`` allows
MAX_ROUNDS, FAILURE = 10_000, 1e-3


def sphere(rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """I.i.d. points uniform on ``S^{d−1}``: shape + (d,)."""
    z = rng.standard_normal((*shape, d))
    return z / np.linalg.norm(z, axis=-1, keepdims=True)


def nearest_neighbour(x: np.ndarray) -> np.ndarray:
    """``i* = argmin_j ‖x_{N+1} − x_j‖`` (n,): on the sphere the largest ``⟨x_j, x_{N+1}⟩``, the first on ties."""
    return np.einsum("bjd,bd->bj", x[:, :-1], x[:, -1]).argmax(1)


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
    return {"x": x, "classes": rng.integers(0, K, size=(prompts, N)), "nn": nearest_neighbour(x)}


def separate(x: np.ndarray, classes: np.ndarray | None, delta: float, rng: np.random.Generator) -> np.ndarray:
    """The separated construction with margin ``δ*`` (docs/method.md §3.2), in place on ``x``; returns ``nn`` (n,).
    ``classes`` ``None`` (scalar labels) makes every other context point count (the binary paper's Appendix B)."""
    if not 0.0 < delta < 4.0:
        raise ValueError(f"delta (the margin δ*) must lie in (0, 4) for points on the sphere; got {delta}")
    prompts, N, d = x.shape[0], x.shape[1] - 1, x.shape[2]
    nn = rng.integers(0, N, size=prompts)
    rows = np.arange(prompts)
    x[:, -1] = x[rows, nn]
    group = np.broadcast_to(np.arange(N), (prompts, N)) if classes is None else classes
    keep_away = group != group[rows, nn][:, None]  # (n, N)
    for _ in range(MAX_ROUNDS):
        bad = keep_away & (((x[:, :-1] - x[:, -1:]) ** 2).sum(-1) < delta)  # squared distances to the query
        if not bad.any():
            return nn
        x[:, :-1][bad] = sphere(rng, (int(bad.sum()),), d)
    raise RuntimeError(f"separated sampler did not reach the margin delta={delta} in {MAX_ROUNDS} rounds")


def largest_delta(d: int, points: int) -> float:
    """The largest margin ``separate`` reaches for ``points`` kept-away context points but with chance ``FAILURE``,
    the bound ``points · (1 − p)^MAX_ROUNDS`` of docs/method.md §3.2 (``θ`` of density ∝ ``sin^{d−2} θ`` on (0, π))."""
    theta = np.linspace(0.0, np.pi, 2**16 + 2)[1:-1]
    weight = np.exp((d - 2) * np.log(np.sin(theta)))
    tail = np.cumsum(weight[::-1])[::-1] / weight.sum()  # P(θ' >= θ)
    p_min = -np.expm1(np.log(FAILURE / points) / MAX_ROUNDS)
    return float(2.0 - 2.0 * np.cos(theta[tail >= p_min].max()))


def separated_prompts(
    prompts: int, d: int, N: int, K: int, delta: float, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Uniform prompts made separated with margin ``δ*`` (``separate``): the multiclass separated test set."""
    drawn = uniform_prompts(prompts, d, N, K, rng)
    return drawn | {"nn": separate(drawn["x"], drawn["classes"], delta, rng)}


def seeded_generator(seed: int, purpose: str, *parts: object) -> np.random.Generator:
    """A generator for every set of parameters: ``numpy_generator`` of ``(seed, purpose, instance_of(*parts))``."""
    return numpy_generator(seed, purpose, instance_of(*parts))


def make_test_set(
    test_set: str, test_size: int, d: int, N: int, K: int, delta: float | None, seed: int
) -> dict[str, np.ndarray]:
    """One multiclass test set, seeded by ``seed`` and the set's own parameters."""
    if test_set not in TEST_SETS:
        raise ValueError(f"test_set must be one of {', '.join(TEST_SETS)}; got {test_set!r}")
    rng = seeded_generator(seed, "test_set", test_set, test_size, d, N, K, delta)
    if test_set == "uniform":
        return uniform_prompts(test_size, d, N, K, rng)
    return separated_prompts(test_size, d, N, K, float(delta), rng)


def make_binary_set(
    test_set: str, prompts: int, d: int, N: int, labels: str, delta: float | None, seed: int
) -> dict[str, np.ndarray]:
    """One binary prompt set (the training set or a test set), seeded by ``seed`` and the set's own parameters."""
    if test_set not in BINARY_TEST_SETS:
        raise ValueError(f"test_set must be one of {', '.join(BINARY_TEST_SETS)}; got {test_set!r}")
    rng = seeded_generator(seed, "binary_set", "binary", test_set, prompts, d, N, labels, delta)
    x = sphere(rng, (prompts, N + 1), d)
    drawn = {"x": x, "y": draw_labels(rng, (prompts, N), labels), "nn": nearest_neighbour(x)}
    if test_set == "separated":  # without classes: every other context point counts
        drawn["nn"] = separate(drawn["x"], None, float(delta), rng)
    return drawn
