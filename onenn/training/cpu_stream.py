"""The stream of docs/method.md §4.4 in numba: ``onenn.maths.stream``'s words bit for bit, a block's draws
(``draw_block``) and ``permutation``; float32 log, sin, cos by Cephes' polynomials (tests/unit/test_stream.py)."""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from onenn.maths import stream
from onenn.maths.stream import KIND_GAUSSIAN, KIND_INTEGERS, TWO_PI, U_MIN, UNIFORM_SCALE, order

_f32, _i32, _u32, _u64 = np.float32, np.int32, np.uint32, np.uint64
M0, M1 = _u64(stream.PHILOX_M0), _u64(stream.PHILOX_M1)
W0, W1 = _u32(stream.PHILOX_W0), _u32(stream.PHILOX_W1)
LOW = _u64(0xFFFFFFFF)
TOKEN_SHIFT, KIND_SHIFT, PROMPT_SHIFT, STEP_SHIFT = (stream.SHIFTS[f] for f in ("token", "kind", "prompt", "step"))


def _bitcast(source, target, ir_type):
    """An intrinsic that reinterprets the bits of a ``source`` value as a ``target`` one (a bitcast: no instruction)."""

    def cast(typingctx, x):
        if x != source:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir_type)

        return target(source), codegen

    return intrinsic(cast)


_bits = _bitcast(types.float32, types.int32, ir.IntType(32))  # the bits of a float32 as an int32
_float = _bitcast(types.int32, types.float32, ir.FloatType())  # the float32 whose bits are an int32


@intrinsic
def _wide_vectors(typingctx):
    """Marks the calling function for LLVM's 512-bit vectors (``prefer-vector-width``; else AVX-512 keeps to 256)."""

    def codegen(context, builder, signature, args):
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')  # a string attribute llvmlite does not list
        return context.get_dummy_value()

    return types.none(), codegen


# Cephes' logf: x = 2^e · f, f in [√½, √2), log x = e·ln 2 + g − g²/2 + g³·P(g), g = f − 1 (ln 2 in two parts)
_SQRT_HALF_BITS = _i32(0x3F3504F3)  # the bits of float32(√½)
_EXPONENT_MASK = _i32(-(1 << 23))  # sign and exponent bits
_L = tuple(_f32(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                              1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                              3.3333331174e-1))  # fmt: skip
_LN2_HI, _LN2_LO = _f32(0.693359375), _f32(-2.12194440e-4)


@njit(inline="always", error_model="numpy")
def log_f32(x):
    """ln x for a positive normal float32 ``x`` (Cephes' ``logf``, within 2 ulp), split on the bits as musl's ``logf``;
    integers in int32 (int64 would cost the vector loop half its lanes)."""
    i = _bits(x)
    t = _i32(i - _SQRT_HALF_BITS)
    e = _i32(t >> _i32(23))  # arithmetic shift: e < 0 below 1
    f = _float(_i32(i - _i32(t & _EXPONENT_MASK)))  # x / 2^e
    g = f - _f32(1.0)  # exact (Sterbenz)
    z = g * g
    p = ((((_L[0] * g + _L[1]) * g + _L[2]) * g + _L[3]) * g + _L[4]) * g + _L[5]
    p = ((p * g + _L[6]) * g + _L[7]) * g + _L[8]
    y = p * g * z
    fe = _f32(e)
    y = y + fe * _LN2_LO
    y = y - _f32(0.5) * z
    return g + y + fe * _LN2_HI


# Cephes' sinf and cosf: x reduced by j·π/4 (π/4 in three parts), j even, to |y| ≤ π/4; then the two polynomials
_FOUR_OVER_PI = _f32(1.27323954473516)
_DP1, _DP2, _DP3 = _f32(0.78515625), _f32(2.4187564849853515625e-4), _f32(3.77489497744594108e-8)
_S0, _S1, _S2 = _f32(-1.9515295891e-4), _f32(8.3321608736e-3), _f32(-1.6666654611e-1)
_C0, _C1, _C2 = _f32(2.443315711809948e-5), _f32(-1.388731625493765e-3), _f32(4.166664568298827e-2)
_SIGN = _i32(-(1 << 31))  # the sign bit


@njit(inline="always", error_model="numpy")
def sincos_f32(x):
    """(sin x, cos x) for a float32 ``x`` in ``[0, 2π]`` (Cephes' ``sinf``, ``cosf``; within 2 ulp or 2⁻²⁴)."""
    j = _i32(x * _FOUR_OVER_PI)
    j = _i32(_i32(j + _i32(1)) & _i32(-2))  # even: the nearest multiple of π/2 below or above
    y = _f32(j)
    y = ((x - y * _DP1) - y * _DP2) - y * _DP3  # |y| ≤ π/4
    z = y * y
    s = ((_S0 * z + _S1) * z + _S2) * z * y + y
    c = ((_C0 * z + _C1) * z + _C2) * z * z - _f32(0.5) * z + _f32(1.0)
    odd = _i32(j & _i32(2)) != _i32(0)
    sin = c if odd else s
    cos = s if odd else c
    sin = _float(_i32(_bits(sin) ^ _i32(_i32(j << _i32(29)) & _SIGN)))
    cos = _float(_i32(_bits(cos) ^ _i32(_i32(_i32(j + _i32(2)) << _i32(29)) & _SIGN)))
    return sin, cos


@njit(inline="always", error_model="numpy")
def _philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of the counter ``(c0, c1, c2, c3)`` under the key ``(k0, k1)``, uint32 words."""
    for _ in range(10):
        p0 = _u64(c0) * M0
        p1 = _u64(c2) * M1
        c0, c1, c2, c3 = (
            _u32(p1 >> _u64(32)) ^ c1 ^ k0,
            _u32(p1 & LOW),
            _u32(p0 >> _u64(32)) ^ c3 ^ k1,
            _u32(p0 & LOW),
        )
        k0 = _u32(k0 + W0)
        k1 = _u32(k1 + W1)
    return c0, c1, c2, c3


@njit(inline="always", error_model="numpy")
def _uniform(w):
    """Triton's ``uint_to_uniform_float`` of a uint32 word (onenn.maths.stream.uniform)."""
    x = _i32(w)
    x = _i32(x ^ _i32(x >> _i32(31)))  # −x − 1 = ~x where x < 0
    return _f32(x) * UNIFORM_SCALE


@njit(inline="always", error_model="numpy")
def _box_muller(w0, w1):
    """Two normals from two words (onenn.maths.stream.box_muller), in float32 with the polynomials above."""
    u1 = max(U_MIN, _uniform(w0))
    theta = TWO_PI * _uniform(w1)
    r = np.sqrt(_f32(-2.0) * log_f32(u1))
    s, c = sincos_f32(theta)
    return r * c, r * s


@njit(inline="always", error_model="numpy")
def _philox_at(key, step, b, kind, token, group):
    """The four words of ``onenn.maths.stream.randint4x(key, counter(step, b, kind, token, group))``."""
    offset = (
        (_u64(step) << _u64(STEP_SHIFT))
        | (_u64(b) << _u64(PROMPT_SHIFT))
        | _u64(kind << KIND_SHIFT)
        | _u64(token << TOKEN_SHIFT)
        | _u64(group)
    )
    zero, k0, k1 = _u32(0), _u32(_u64(key) & LOW), _u32(_u64(key) >> _u64(32))
    return _philox(_u32(offset & LOW), _u32(offset >> _u64(32)), zero, zero, k0, k1)


@njit(cache=True, error_model="numpy")
def draw_block(Z, C, key, first_step, n, K, d):
    """Steps ``first_step ..`` ``+ n − 1`` of ``onenn.maths.stream.minibatch``: the Gaussians into ``Z[:n, :d]``
    float32 (a float32 engine's embeddings, or a buffer), the classes into ``C[:n]`` (S, N, B) int64."""
    _wide_vectors()
    for i in range(n):
        _gaussians(Z[i][:d], key, first_step + i)
        _classes(C[i], key, first_step + i, K)


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _gaussians(z, key, step):
    """The Gaussians ``z`` (d, N+1, B) float32 of step ``step``: per token and group, Philox over the prompts into a
    row of words, then loops of Box–Muller pairs (two short vector loops beat one long one)."""
    _wide_vectors()
    d, T, B = z.shape
    words = np.empty((4, B), dtype=np.uint32)
    for j in range(T):
        for m in range((d + 3) // 4):
            for b in range(B):
                words[0, b], words[1, b], words[2, b], words[3, b] = _philox_at(key, step, b, KIND_GAUSSIAN, j, m)
            for r in range(2):
                k = 4 * m + 2 * r  # the pair's first coordinate
                if k + 1 < d:
                    for b in range(B):
                        z[k, j, b], z[k + 1, j, b] = _box_muller(words[2 * r, b], words[2 * r + 1, b])
                elif k < d:
                    for b in range(B):
                        z[k, j, b], _ = _box_muller(words[2 * r, b], words[2 * r + 1, b])


@njit(cache=True, error_model="numpy")
def _classes(classes, key, step, K):
    """The classes (N, B) int64 of step ``step`` of a minibatch, in ``0 .. K − 1``, in place."""
    _wide_vectors()
    N, B = classes.shape
    KK = _u64(K)
    for g in range((N + 3) // 4):
        j = 4 * g
        for b in range(B):
            w0, w1, w2, w3 = _philox_at(key, step, b, KIND_INTEGERS, g, 0)
            classes[j, b] = np.int64((_u64(w0) * KK) >> _u64(32))
            if j + 1 < N:
                classes[j + 1, b] = np.int64((_u64(w1) * KK) >> _u64(32))
            if j + 2 < N:
                classes[j + 2, b] = np.int64((_u64(w2) * KK) >> _u64(32))
            if j + 3 < N:
                classes[j + 3, b] = np.int64((_u64(w3) * KK) >> _u64(32))


@njit(cache=True, error_model="numpy")
def order_words(key, index, out):
    """Into ``out`` (uint32), the words ``onenn.maths.stream.permutation`` sorts."""
    _wide_vectors()
    for i in range(out.shape[0]):
        out[i], _, _, _ = _philox_at(key, index, i, KIND_INTEGERS, 0, 0)


def permutation(key: int, n: int, index: int) -> np.ndarray:
    """``onenn.maths.stream.permutation(key, n, index)`` with the words drawn by compiled code: the same permutation."""
    words = np.empty(n, dtype=np.uint32)
    order_words(key, index, words)
    return order(words)
