"""The counter-based random stream of docs/method.md §4.4 (Philox4x32-10 with Triton's conventions): the reference,
in numpy uint64 arithmetic. Its ports (``cpu_stream``, ``gpu``) import its constants; tests/unit/test_stream.py."""

import zlib

import numpy as np

#: the round multipliers and the key increments (the Weyl sequence: the golden ratio and √3 − 1 in 32 bits)
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
_MASK32 = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def philox4x32(c0, c1, c2, c3, k0, k1) -> tuple[np.ndarray, ...]:
    """Philox4x32-10 (docs/method.md §4.4): four uint32 arrays, the arguments broadcast; in uint64, products are exact."""
    c0, c1, c2, c3, k0, k1 = (np.asarray(x, dtype=np.uint64) & _MASK32 for x in (c0, c1, c2, c3, k0, k1))
    c0, c1, c2, c3, k0, k1 = np.broadcast_arrays(c0, c1, c2, c3, k0, k1)
    M0, M1, W0, W1 = (np.uint64(x) for x in (PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1))
    for _ in range(10):
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> _32) ^ c1 ^ k0, p1 & _MASK32, (p0 >> _32) ^ c3 ^ k1, p0 & _MASK32
        k0, k1 = (k0 + W0) & _MASK32, (k1 + W1) & _MASK32
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def key_words(key: int) -> tuple[int, int]:
    """The key words ``(k0, k1)`` of a 64-bit key, low word first, as Triton's ``philox`` splits its seed."""
    return key & 0xFFFFFFFF, key >> 32


def randint4x(key: int, offset) -> np.ndarray:
    """Triton's ``tl.randint4x(key, offset)``: Philox at ``(offset mod 2³², ⌊offset / 2³²⌋, 0, 0)``, (4, ...) uint32."""
    offset = np.asarray(offset, dtype=np.uint64)
    return np.stack(philox4x32(offset & _MASK32, offset >> _32, 0, 0, *key_words(key)))


#: Triton's ``uint_to_uniform_float`` scale for 32-bit words: the largest float32 ``s`` with ``(2³¹ − 1)·s < 1``
UNIFORM_SCALE = np.float32(4.6566127342e-10)
#: the Box–Muller transform's floor on its first uniform (``tl.maximum(1.0e-7, u1)``) and its 2π, in float32
U_MIN = np.float32(1.0e-7)
TWO_PI = np.float32(6.283185307179586)


def uniform(words: np.ndarray) -> np.ndarray:
    """Uniform float32 on ``[0, 1)`` from uint32 words, exactly as Triton's ``uint_to_uniform_float`` (§4.4)."""
    x = np.asarray(words, dtype=np.uint32).view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * UNIFORM_SCALE


def box_muller(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two normals from two uniforms, as Triton's ``pair_uniform_to_normal`` (§4.4): ``r``, ``cos θ``, ``sin θ`` in
    float64, the products rounded to float32 once (within an ulp of the exact values)."""
    u1 = np.maximum(U_MIN, np.asarray(u1, dtype=np.float32))
    theta = (TWO_PI * np.asarray(u2, dtype=np.float32)).astype(np.float64)
    r = np.sqrt(-2.0 * np.log(u1.astype(np.float64)))
    return (r * np.cos(theta)).astype(np.float32), (r * np.sin(theta)).astype(np.float32)


def randn4x(key: int, offset) -> np.ndarray:
    """Triton's ``tl.randn4x(key, offset)``: ``box_muller(u0, u1) + box_muller(u2, u3)``, (4, ...) float32."""
    u = uniform(randint4x(key, offset))
    return np.stack([*box_muller(u[0], u[1]), *box_muller(u[2], u[3])])


def classes(words: np.ndarray, K: int) -> np.ndarray:
    """A class ``⌊K·w / 2³²⌋`` in ``0 .. K − 1`` from each uint32 word ``w`` (int64)."""
    return ((np.asarray(words, dtype=np.uint64) * np.uint64(K)) >> _32).astype(np.int64)


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
}
SEED_BITS, INSTANCE_BITS, PURPOSE_BITS = 32, 24, 7


def instance_of(*parts: object) -> int:
    """The instance number of a purpose's parameters: the low 24 bits of the CRC-32 of ``parts`` (§4.4's ``h``)."""
    return zlib.crc32("|".join(format(p) for p in parts).encode()) & ((1 << INSTANCE_BITS) - 1)


def stream_key(seed: int, purpose: str, instance: int = 0) -> int:
    """The 64-bit Philox key ``code · 2⁵⁶ + instance · 2³² + seed`` of ``(seed, purpose, instance)`` (§4.4), < 2⁶³."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {', '.join(PURPOSES)}; got {purpose!r}")
    for name, value, bits in (("seed", seed, SEED_BITS), ("instance", instance, INSTANCE_BITS)):
        if not 0 <= value < 1 << bits:
            raise ValueError(f"{name} must lie in 0 .. 2^{bits} - 1 for the random stream; got {value}")
    return (PURPOSES[purpose] << (SEED_BITS + INSTANCE_BITS)) | (instance << SEED_BITS) | seed


def numpy_generator(seed: int, purpose: str, instance: int = 0) -> np.random.Generator:
    """numpy's Philox4x64-10 generator under ``stream_key(seed, purpose, instance)`` (for numpy's own methods)."""
    return np.random.Generator(np.random.Philox(key=stream_key(seed, purpose, instance)))


#: the counter's fields and their widths, low bits first (docs/method.md §4.4)
FIELDS = (("group", 8), ("token", 11), ("kind", 1), ("prompt", 20), ("step", 23))
#: the kinds of draw: a token's Gaussian coordinates, or one integer a token (a class or a label)
KIND_GAUSSIAN, KIND_INTEGERS = 0, 1
SHIFTS = {name: sum(bits for _, bits in FIELDS[:i]) for i, (name, _) in enumerate(FIELDS)}
BOUNDS = {name: 1 << bits for name, bits in FIELDS}


def counter(step, prompt, kind, token, group) -> np.ndarray:
    """The counter ``t·2⁴⁰ + b·2²⁰ + kind·2¹⁹ + j·2⁸ + m`` of a call (uint64, broadcast); raises outside ``BOUNDS``."""
    total = np.uint64(0)
    for name, value in {"step": step, "prompt": prompt, "kind": kind, "token": token, "group": group}.items():
        value = np.asarray(value, dtype=np.int64)
        if value.size and not (0 <= value.min() and value.max() < BOUNDS[name]):
            raise ValueError(
                f"{name} must lie in 0 .. {BOUNDS[name] - 1} for the random stream; got {value.min()} .. {value.max()}"
            )
        total = total | (value.astype(np.uint64) << np.uint64(SHIFTS[name]))
    return total


def check_minibatch(d: int, N: int, batch: int) -> None:
    """Raise unless a minibatch of ``batch`` prompts of ``N + 1`` tokens in dimension ``d`` fits the counter."""
    for name, value in (("prompt", batch), ("token", N + 1), ("group", (d + 3) // 4)):
        if value > BOUNDS[name]:
            raise ValueError(
                f"the random stream's counter holds at most {BOUNDS[name]} of its field {name!r} (batch, N + 1, "
                f"⌈d/4⌉); this run needs {value}"
            )


def minibatch(key: int, step: int, d: int, N: int, K: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """The draws of step ``step`` (§4.4), prompt innermost: Gaussians (d, N+1, B) float32, classes (N, B) int64."""
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
    """A (rows, cols) float32 matrix of the stream's normals, row ``i`` read as token ``i`` (``W0``'s noise ``G``)."""
    m = np.arange((cols + 3) // 4)[:, None]
    z = randn4x(key, counter(0, 0, KIND_GAUSSIAN, np.arange(rows)[None, :], m))  # (4, groups, rows)
    return np.ascontiguousarray(z.transpose(2, 1, 0).reshape(rows, -1)[:, :cols])


def permutation(key: int, n: int, index: int) -> np.ndarray:
    """Permutation ``index`` of ``0 .. n − 1`` (pass ``index`` over a fixed set, docs/method.md §4.4), int64."""
    return order(randint4x(key, counter(index, np.arange(n), KIND_INTEGERS, 0, 0))[0])


def order(words: np.ndarray) -> np.ndarray:
    """The stable argsort of uint32 ``words``: the low words of the sorted ``w_i · 2³² + i`` (faster than argsort)."""
    packed = (words.astype(np.uint64) << _32) | np.arange(len(words), dtype=np.uint64)
    return (np.sort(packed) & _MASK32).astype(np.int64)
