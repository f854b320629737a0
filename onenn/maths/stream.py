"""The project's counter-based random stream (docs/method.md §4.4): its definition and the reference implementation,
plain numpy in vectorised uint64 arithmetic (slow and clear; no torch).

Philox4x32-10 (Salmon, Moraes, Dror & Shaw, *Parallel random numbers: as easy as 1, 2, 3*, SC 2011) with the
conventions of Triton's ``tl.randint4x``, ``tl.rand`` and ``tl.randn4x``: a 64-bit key ``(k1, k0)``, a 64-bit counter
``(c1, c0)`` with ``c2 = c3 = 0``, four 32-bit words a call. A draw is addressed by ``(seed, purpose)``, which makes
the key, and by ``(step, prompt, token, coordinate)``, which makes the counter, so it depends neither on how many
draws are made at once nor on their order. Its ports, numba (``onenn.training.cpu_stream``) and Triton
(``onenn.training.gpu``), import the constants below and are held to it by tests/unit/test_stream.py and test_gpu.py.
"""

from __future__ import annotations

import zlib

import numpy as np

# --- Philox4x32-10

#: the round multipliers and the key increments (the Weyl sequence: the golden ratio and √3 − 1 in 32 bits)
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
ROUNDS = 10
_MASK32 = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def philox4x32(c0, c1, c2, c3, k0, k1, rounds: int = ROUNDS) -> tuple[np.ndarray, ...]:
    """Philox4x32 with ``rounds`` rounds of the counter ``(c0, c1, c2, c3)`` under the key ``(k0, k1)``: four uint32
    arrays (the arguments broadcast; any integers in ``0 .. 2³² − 1``). A round, all in 32-bit words:

        hi0:lo0 = M0 · c0,   hi1:lo1 = M1 · c2          (64-bit products)
        (c0, c1, c2, c3) ← (hi1 ⊕ c1 ⊕ k0, lo1, hi0 ⊕ c3 ⊕ k1, lo0)
        (k0, k1) ← (k0 + W0, k1 + W1)  mod 2³²

    The words are held in uint64 so that every product is exact."""
    c0, c1, c2, c3, k0, k1 = (np.asarray(x, dtype=np.uint64) & _MASK32 for x in (c0, c1, c2, c3, k0, k1))
    c0, c1, c2, c3, k0, k1 = np.broadcast_arrays(c0, c1, c2, c3, k0, k1)
    M0, M1, W0, W1 = (np.uint64(x) for x in (PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1))
    for _ in range(rounds):
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> _32) ^ c1 ^ k0, p1 & _MASK32, (p0 >> _32) ^ c3 ^ k1, p0 & _MASK32
        k0, k1 = (k0 + W0) & _MASK32, (k1 + W1) & _MASK32
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def key_words(key: int) -> tuple[int, int]:
    """The two 32-bit key words of a 64-bit key, as Triton's ``philox`` splits its seed: ``k0`` the low word,
    ``k1`` the high word."""
    return key & 0xFFFFFFFF, key >> 32


def randint4x(key: int, offset) -> np.ndarray:
    """Triton's ``tl.randint4x(key, offset)`` for a 64-bit ``offset`` (uint64 array): the counter is
    ``(offset mod 2³², ⌊offset / 2³²⌋, 0, 0)``. Returns (4, *offset.shape) uint32."""
    offset = np.asarray(offset, dtype=np.uint64)
    k0, k1 = key_words(key)
    return np.stack(philox4x32(offset & _MASK32, offset >> _32, 0, 0, k0, k1))


# --- from words to numbers

#: Triton's ``uint_to_uniform_float`` scale for 32-bit words: the largest float32 ``s`` with ``(2³¹ − 1)·s < 1``
UNIFORM_SCALE = np.float32(4.6566127342e-10)
#: the Box–Muller transform's floor on its first uniform (``tl.maximum(1.0e-7, u1)``) and its 2π, in float32
U_MIN = np.float32(1.0e-7)
TWO_PI = np.float32(6.283185307179586)


def uniform(words: np.ndarray) -> np.ndarray:
    """Uniform float32 on ``[0, 1)`` from uint32 words, exactly as Triton's ``uint_to_uniform_float``: the word
    read as an int32 ``x``; ``x ← −x − 1`` where ``x < 0`` (so ``0 ≤ x ≤ 2³¹ − 1``); then ``float32(x) · s`` in
    float32, ``s = UNIFORM_SCALE``. Every step is exactly rounded, so the floats are the same bits everywhere."""
    x = np.asarray(words, dtype=np.uint32).view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * UNIFORM_SCALE


def box_muller(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normals from two uniforms, as Triton's ``pair_uniform_to_normal``: ``u1 ← max(1e-7, u1)``,
    ``θ = 2π·u2`` (both in float32, exactly rounded), ``r = √(−2 ln u1)``, and ``(r cos θ, r sin θ)``. Here ``r``,
    ``cos θ`` and ``sin θ`` are evaluated in float64 from the float32 ``u1`` and ``θ`` and the products rounded to
    float32 once: within an ulp of the exact values. Other implementations evaluate them in float32 and agree within
    a few ulps."""
    u1 = np.maximum(U_MIN, np.asarray(u1, dtype=np.float32))
    theta = (TWO_PI * np.asarray(u2, dtype=np.float32)).astype(np.float64)
    r = np.sqrt(-2.0 * np.log(u1.astype(np.float64)))
    return (r * np.cos(theta)).astype(np.float32), (r * np.sin(theta)).astype(np.float32)


def randn4x(key: int, offset) -> np.ndarray:
    """Triton's ``tl.randn4x(key, offset)``: words ``w0..w3`` of ``randint4x``, uniforms ``u_i``, and the normals
    ``box_muller(u0, u1) + box_muller(u2, u3)``. Returns (4, *offset.shape) float32."""
    u = uniform(randint4x(key, offset))
    return np.stack([*box_muller(u[0], u[1]), *box_muller(u[2], u[3])])


def classes(words: np.ndarray, K: int) -> np.ndarray:
    """A class in ``0 .. K − 1`` from each uint32 word ``w``: ``⌊K·w / 2³²⌋`` (multiply-shift; each class has
    probability within ``K / 2³²`` of ``1/K``). int64."""
    return ((np.asarray(words, dtype=np.uint64) * np.uint64(K)) >> _32).astype(np.int64)


# --- the key: (seed, purpose)

#: every random input of the project, and its code (the key's top byte). Never renumber: a code is part of the
#: stream's definition. Purposes with many instances under one seed tell them apart by an instance number.
PURPOSES = {
    "initial_weights": 1,  # W0's noise G of a training run (multiclass and binary)
    "minibatches": 2,  # the fresh minibatches of a multiclass training run
    "minibatch_order": 3,  # the binary runs' reshuffles of their fixed training set
    "test_set": 4,  # a multiclass test set (uniform or separated); instance: its parameters
    "binary_set": 5,  # a binary prompt set (the training set or a test set); instance: its parameters
    "scaling": 6,  # a point of the scaling-identity experiment; instance: the point
    "landscape": 7,  # the landscape's sample of inner products
    "audit": 8,  # the audit's samples; instance: 0 main, 1 resample, 2 plain
    "full_matrix": 9,  # the prompts of full-matrix gradient descent
}
SEED_BITS, INSTANCE_BITS, PURPOSE_BITS = 32, 24, 7


def instance_of(*parts: object) -> int:
    """The instance number of a purpose's parameters: the low 24 bits of the CRC-32 of ``parts`` written with
    ``format`` and joined by ``|`` (as ``onenn.maths.prompts.seeded_generator`` hashes a set's parameters)."""
    return zlib.crc32("|".join(format(p) for p in parts).encode()) & ((1 << INSTANCE_BITS) - 1)


def stream_key(seed: int, purpose: str, instance: int = 0) -> int:
    """The 64-bit Philox key of ``(seed, purpose, instance)``: ``code · 2⁵⁶ + instance · 2³² + seed``, so
    ``k0 = seed`` and ``k1 = code · 2²⁴ + instance``. Distinct triples give distinct keys (each field has its own
    bits), and the key stays below 2⁶³ (a non-negative int64, as a Triton kernel takes it)."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {', '.join(PURPOSES)}; got {purpose!r}")
    for name, value, bits in (("seed", seed, SEED_BITS), ("instance", instance, INSTANCE_BITS)):
        if not 0 <= value < 1 << bits:
            raise ValueError(f"{name} must lie in 0 .. 2^{bits} - 1 for the random stream; got {value}")
    return (PURPOSES[purpose] << (SEED_BITS + INSTANCE_BITS)) | (instance << SEED_BITS) | seed


def numpy_generator(seed: int, purpose: str, instance: int = 0) -> np.random.Generator:
    """A numpy generator for the random inputs drawn once, on the CPU, by numpy's own methods (the prompt sets and
    the samples of the theory experiments): numpy's Philox4x64-10 bit generator keyed by ``stream_key(seed,
    purpose, instance)``, so no two purposes, instances or seeds share a stream, and none shares one with a run's
    Philox4x32 stream (another cipher)."""
    return np.random.Generator(np.random.Philox(key=stream_key(seed, purpose, instance)))


# --- the counter: (step, prompt, kind, token, group)

#: the counter's fields, low bits first: the coordinate group m = ⌊k/4⌋ (Gaussian k of a token is word k mod 4 of
#: group m), the token j (for KIND_INTEGERS: the group ⌊j/4⌋ of four tokens, word j mod 4), the kind of draw, the
#: prompt b, the step t. The widths bound each field; the counter stays below 2⁶³.
FIELDS = (("group", 8), ("token", 11), ("kind", 1), ("prompt", 20), ("step", 23))
#: the kinds of draw: a token's Gaussian coordinates, or one integer a token (a class or a label)
KIND_GAUSSIAN, KIND_INTEGERS = 0, 1
SHIFTS = {"group": 0, "token": 8, "kind": 19, "prompt": 20, "step": 40}
BOUNDS = {name: 1 << bits for name, bits in FIELDS}


def counter(step, prompt, kind, token, group) -> np.ndarray:
    """The 64-bit counter of a call (uint64; the arguments broadcast): ``t·2⁴⁰ + b·2²⁰ + kind·2¹⁹ + j·2⁸ + m``.
    Raises if a field is out of its bounds (``BOUNDS``)."""
    values = {"step": step, "prompt": prompt, "kind": kind, "token": token, "group": group}
    total = np.uint64(0)
    for name, value in values.items():
        value = np.asarray(value, dtype=np.int64)
        if value.size and not (0 <= value.min() and value.max() < BOUNDS[name]):
            raise ValueError(
                f"{name} must lie in 0 .. {BOUNDS[name] - 1} for the random stream; got {value.min()} .. {value.max()}"
            )
        total = total | (value.astype(np.uint64) << np.uint64(SHIFTS[name]))
    return total


def check_minibatch(d: int, N: int, batch: int) -> None:
    """Raise unless a minibatch of ``batch`` prompts of ``N + 1`` tokens in dimension ``d`` fits the counter's
    fields (``BOUNDS``: prompts, tokens, coordinate groups)."""
    for name, value in (("prompt", batch), ("token", N + 1), ("group", (d + 3) // 4)):
        if value > BOUNDS[name]:
            raise ValueError(
                f"the random stream's counter holds at most {BOUNDS[name]} of its field {name!r} (batch, N + 1, "
                f"⌈d/4⌉); this run needs {value}"
            )


def minibatch(key: int, step: int, d: int, N: int, K: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """The draws of step ``step`` of a multiclass minibatch, in the engine's layout (prompt innermost): Gaussians
    ``z`` (d, N+1, B) float32, coordinate ``k`` of token ``j`` (the query ``j = N``) of prompt ``b`` being word
    ``k mod 4`` of ``randn4x`` at ``counter(t, b, KIND_GAUSSIAN, j, ⌊k/4⌋)``; classes (N, B) int64, the class of
    context token ``j`` being word ``j mod 4`` of ``randint4x`` at ``counter(t, b, KIND_INTEGERS, ⌊j/4⌋, 0)``."""
    b = np.arange(batch)
    j = np.arange(N + 1)[:, None]
    m = np.arange((d + 3) // 4)[:, None, None]
    z = randn4x(key, counter(step, b, KIND_GAUSSIAN, j, m))  # (4, G, N+1, B): word r of group m
    z = z.transpose(1, 0, 2, 3).reshape(-1, N + 1, batch)[:d]  # coordinate 4m + r
    groups = np.arange((N + 3) // 4)[:, None]
    words = randint4x(key, counter(step, b, KIND_INTEGERS, groups, 0))  # (4, ⌈N/4⌉, B)
    words = words.transpose(1, 0, 2).reshape(-1, batch)[:N]  # token 4g + r
    return np.ascontiguousarray(z), classes(words, K)


def gaussian_matrix(key: int, rows: int, cols: int) -> np.ndarray:
    """A (rows, cols) matrix of standard normals (float32, the stream's normals), entry ``(i, k)`` being word
    ``k mod 4`` of ``randn4x`` at ``counter(0, 0, KIND_GAUSSIAN, i, ⌊k/4⌋)``: a token's coordinates, row ``i``
    read as token ``i`` (the initial weights' noise ``G``)."""
    m = np.arange((cols + 3) // 4)[:, None]
    z = randn4x(key, counter(0, 0, KIND_GAUSSIAN, np.arange(rows)[None, :], m))  # (4, groups, rows)
    return np.ascontiguousarray(z.transpose(2, 1, 0).reshape(rows, -1)[:, :cols])


def permutation(key: int, n: int, index: int) -> np.ndarray:
    """Permutation ``index`` of ``0 .. n − 1`` (the order of pass ``index`` over a fixed set): the stable argsort of
    the words ``w_i``, ``w_i`` word 0 of ``randint4x`` at ``counter(index, i, KIND_INTEGERS, 0, 0)`` (ties, of
    probability about ``n² / 2³³``, keep ``i``'s order). int64."""
    words = randint4x(key, counter(index, np.arange(n), KIND_INTEGERS, 0, 0))[0]
    return order(words)


def order(words: np.ndarray) -> np.ndarray:
    """The stable argsort of uint32 ``words``: the low words of the sorted ``w_i · 2³² + i`` (distinct numbers, so
    any sort gives them in the same order; numpy's sort of uint64 is several times faster than a stable argsort)."""
    packed = (words.astype(np.uint64) << _32) | np.arange(len(words), dtype=np.uint64)
    return (np.sort(packed) & _MASK32).astype(np.int64)
