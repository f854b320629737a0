"""The numba port of ``loss._per_prompt`` (its test: docs/guide.md's table) and the population quadrature's
compiled lookups (``interp``: ``np.interp``'s numbers; ``drawn_gaps``; ``exp_moments``)."""

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

#: prompts per block: the block's dozen scratch vectors (2 kB each) stay in the L1 cache
_BLOCK = 256
_LOG2E = 1.4426950408889634
#: ln 2 in two parts (Cody and Waite): ``k * _LN2_HI`` is exact for the ``|k| <= 2^11`` used here
_LN2_HI = 6.93145751953125e-1
_LN2_LO = 1.42860682030941723212e-6
#: below this, exp(x) is 0 in float64 (exp(-745.2) is half the smallest subnormal); ``k >= -2020`` keeps both
#: factors ``2^(k/2)`` of the scale normal numbers
_X_MIN = -1400.0
#: ``1/k!`` for k = 13 down to 0: exp's Taylor polynomial, highest degree first (Horner)
_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(13, -1, -1))
#: numba's only fast-math flag here: ``a * b + c`` may be one fused multiply-add (rounded once instead of twice)
_CONTRACT = {"contract"}


@njit(cache=True, fastmath=_CONTRACT)
def _exp_reduced(x: float) -> tuple[float, int]:
    """``exp(x) = p * 2^k`` for ``x <= 0``: ``k = round(x / ln 2)``, ``p = exp(r)`` on ``|r| <= ln(2)/2`` by its
    Taylor polynomial to degree 13 (truncation error below 4e-18 relative, so ``p`` is within an ulp or so)."""
    x = min(max(x, _X_MIN), 0.0)
    k = math.floor(x * _LOG2E + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _TAYLOR[0]
    for c in _TAYLOR[1:]:
        p = p * r + c
    return p, np.int64(k)


@njit(cache=True, inline="always")
def _exp_nonpositive(x: np.ndarray, out: np.ndarray, bits1: np.ndarray, bits2: np.ndarray, n: int) -> None:
    """``out[i] = exp(x[i])`` for ``i < n``, ``x[i] <= 0``, within about an ulp of ``np.exp``: ``2^k`` from its bits
    as ``2^k1 2^k2`` (subnormal results round as ``np.exp``'s); ``bits1``, ``bits2``: int64 scratch."""
    for i in range(n):
        p, k = _exp_reduced(x[i])
        out[i] = p
        k1 = k >> 1
        bits1[i] = (k1 + 1023) << 52
        bits2[i] = (k - k1 + 1023) << 52
    scale1, scale2 = bits1.view(np.float64), bits2.view(np.float64)
    for i in range(n):
        out[i] = out[i] * scale1[i] * scale2[i]


@njit(cache=True)
def per_prompt(
    xi1: float,
    xi2: float,
    gaps: np.ndarray,
    gaps_min: np.ndarray,
    gap_query: np.ndarray,
    loss: np.ndarray,
    grad_xi1: np.ndarray,
    grad_xi2: np.ndarray,
) -> None:
    """``loss._per_prompt`` over a whole prepared sample: fills ``loss``, ``grad_xi1``, ``grad_xi2`` (each ``(n,)``)."""
    rows, n = gaps.shape
    b = _BLOCK
    x, e, sub, shift = np.empty(b), np.empty(b), np.empty(b), np.empty(b)
    s1, s2, g1, g2 = np.empty(b), np.empty(b), np.empty(b), np.empty(b)
    e_star, e_query = np.empty(b), np.empty(b)
    bits1, bits2 = np.empty(b, dtype=np.int64), np.empty(b, dtype=np.int64)
    negative = xi1 < 0
    for lo in range(0, n, b):
        m = min(b, n - lo)
        # 1-d views of the block, indexed by the loop counter only: the compiler then knows the indices are
        # contiguous and >= 0 (an index like lo + i costs a check for negative indices, and the vector loop gathers)
        gq, gm = gap_query[lo : lo + m], gaps_min[lo : lo + m]
        # the shift as _per_prompt's; for xi1 >= 0 the context is not shifted (sub = 0): c = exp(-shift) comes after
        for i in range(m):
            shift[i] = max(0.0, xi1 * gq[i] - xi2)
            if negative:
                shift[i] = max(shift[i], xi1 * gm[i])
            sub[i] = shift[i] if negative else 0.0
            s1[i] = 0.0
            s2[i] = 0.0
            g1[i] = 0.0
            g2[i] = 0.0
        for j in range(rows):
            row = gaps[j, lo : lo + m]
            for i in range(m):
                x[i] = xi1 * row[i] - sub[i]
            _exp_nonpositive(x, e, bits1, bits2, m)
            for i in range(m):
                ej = e[i]
                ej2 = ej * ej
                s1[i] += ej
                s2[i] += ej2
                g1[i] += ej * row[i]
                g2[i] += ej2 * row[i]
        for i in range(m):
            x[i] = -shift[i]
        _exp_nonpositive(x, e_star, bits1, bits2, m)
        for i in range(m):
            x[i] = xi1 * gq[i] - xi2 - shift[i]
        _exp_nonpositive(x, e_query, bits1, bits2, m)
        # the block's loss and gradient from its context sums, by _per_prompt's formulas
        out_loss, out_g1, out_g2 = loss[lo : lo + m], grad_xi1[lo : lo + m], grad_xi2[lo : lo + m]
        for i in range(m):
            c = 1.0 if negative else e_star[i]  # the factor exp(-shift) of the context's sums (1: shifted already)
            s = c * s1[i]
            z = e_star[i] + s + e_query[i]  # >= 1: one shifted score is 0
            r = (s + e_query[i]) / z  # 1 - q_{i*}, without cancellation
            cz = c / z
            cz2 = cz * cz
            sum_sq = s2[i] * cz2  # sum_{j != i*} q_j^2
            out_loss[i] = 0.5 * (r * r + sum_sq)
            q_query = e_query[i] / z
            if negative:
                gbar = sum_sq - (e_star[i] / z) * r
            else:  # c = e_star: sum q_j^2 - q_{i*} r = cz2 (s2 - s1) - q_{i*} q_query, exact where every e_j is 1
                gbar = (s2[i] - s1[i]) * cz2 - (e_star[i] / z) * q_query
            out_g1[i] = g2[i] * cz2 - gbar * (g1[i] * cz + q_query * gq[i])
            out_g2[i] = q_query * gbar


#: ``interp_guide``'s cells: ``GUIDE_CELLS`` equal ones from ``GUIDE_SPLIT`` to the table's end, and below it
#: ``2^(52 - GUIDE_SHIFT)`` per binade from ``2^-GUIDE_BINADES`` on (equal in the float's bits: the table of F
#: crowds towards 0, where F(t) ~ (1 + t)^((d-1)/2), and a third of the population's values fall there)
GUIDE_CELLS = 1 << 18
GUIDE_SPLIT = 2.0**-10
GUIDE_SHIFT = 44
GUIDE_BINADES = 80
_GUIDE_BASE = int(np.array(2.0**-GUIDE_BINADES).view(np.int64)) >> GUIDE_SHIFT
_GUIDE_LOW = (int(np.array(GUIDE_SPLIT).view(np.int64)) >> GUIDE_SHIFT) - _GUIDE_BASE


def interp_guide(xp: np.ndarray) -> np.ndarray:
    """For ``interp``: ``guide[c]``, the last ``j`` with ``xp[j] <=`` the lower edge of cell ``c``."""
    low = ((np.arange(_GUIDE_LOW, dtype=np.int64) + _GUIDE_BASE) << GUIDE_SHIFT).view(np.float64)
    high = GUIDE_SPLIT + np.arange(GUIDE_CELLS + 1) * ((xp[-1] - GUIDE_SPLIT) / GUIDE_CELLS)
    return (np.searchsorted(xp, np.concatenate([low, high]), side="right") - 1).astype(np.int32)


@intrinsic
def _bits(typingctx, x):
    """The bits of a float64 as an int64 (a bitcast: no instruction)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@njit(cache=True)
def interp(x: np.ndarray, xp: np.ndarray, fp: np.ndarray, guide: np.ndarray, out: np.ndarray) -> None:
    """``out = np.interp(x, xp, fp)`` (``guide = interp_guide(xp)``): numpy's bracket and formulas, the bracket
    found from the guide in a few steps instead of a bisection of the whole table."""
    last = xp.shape[0] - 1
    top = guide.shape[0] - 1
    x0 = xp[0]
    scale = GUIDE_CELLS / (xp[last] - GUIDE_SPLIT)
    for i in range(x.shape[0]):
        v = x[i]
        if math.isnan(v):
            out[i] = v
            continue
        if v < x0:
            out[i] = fp[0]
            continue
        if v > xp[last]:
            out[i] = fp[last]
            continue
        if v < GUIDE_SPLIT:  # the cell of interp_guide that holds v (up to rounding: its neighbours are looked in too)
            c = max((_bits(v) >> GUIDE_SHIFT) - _GUIDE_BASE, 0)
        else:
            c = _GUIDE_LOW + min(int((v - GUIDE_SPLIT) * scale), GUIDE_CELLS - 1)
        lo, hi = guide[max(c - 1, 0)], guide[min(c + 2, top)]
        if lo < 0 or xp[lo] > v:  # the guide's neighbours missed (rounding cannot move v that far; kept exact)
            lo = 0
        if hi < last and xp[hi + 1] <= v:
            hi = last
        j, hi = lo, max(hi, lo)
        while hi > j:  # bisection: the last j in [lo, hi] with xp[j] <= v
            mid = (j + hi + 1) >> 1
            if xp[mid] <= v:
                j = mid
            else:
                hi = mid - 1
        if j == last or xp[j] == v:
            out[i] = fp[j]
            continue
        slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
        y = slope * (v - xp[j]) + fp[j]
        if math.isnan(y):
            y = slope * (v - xp[j + 1]) + fp[j + 1]
            if math.isnan(y) and fp[j] == fp[j + 1]:
                y = fp[j]
        out[i] = y


#: below this ``|x|``, the segment integrals ``phi_k(x) = int_0^1 e^{-x v} v^(k-1) dv`` are summed as their series
#: (the closed forms cancel digits there); 30 terms leave an error below ``0.5^30 / 30!``
_PHI_SERIES = 0.5


@njit(cache=True)
def _phi(x: float) -> tuple[float, float, float, float]:
    """``(e^{-x}, phi_1, phi_2, phi_3)`` with ``phi_k(x) = int_0^1 e^{-x v} v^(k-1) dv``."""
    e = math.exp(-x)
    if abs(x) >= _PHI_SERIES:
        return e, (1.0 - e) / x, (1.0 - e - x * e) / (x * x), (2.0 - e * (x * x + 2.0 * x + 2.0)) / (x * x * x)
    p1 = p2 = p3 = 0.0
    term = 1.0
    for n in range(30):
        p1 += term / (n + 1)
        p2 += term / (n + 2)
        p3 += term / (n + 3)
        term *= -x / (n + 1)
    return e, p1, p2, p3


@njit(cache=True)
def exp_moments(a: float, h: float, f: np.ndarray, H: np.ndarray, J: np.ndarray) -> None:
    """On the grid ``s_i = s_0 + i h`` of ``f`` (linear between): ``H[i] = int_{s_0}^{s_i} e^{a (t - s_i)} f dt``,
    ``J[i] = int_{s_0}^{s_i} e^{a (t - s_i)} (t - s_i) f dt``, each segment exactly."""
    e, p1, p2, p3 = _phi(a * h)
    i0, i1, i2 = h * p1, h * h * p2, h * h * h * p3
    H[0] = 0.0
    J[0] = 0.0
    for i in range(f.shape[0] - 1):
        slope = (f[i + 1] - f[i]) / h
        H[i + 1] = e * H[i] + f[i + 1] * i0 - slope * i1
        J[i + 1] = e * (J[i] - h * H[i]) - f[i + 1] * i1 + slope * i2


@njit(cache=True)
def exp_sums(e: np.ndarray, gaps: np.ndarray, out: np.ndarray) -> None:
    """``out = (sum e_j, sum e_j^2, sum e_j^2 gap_j, sum e_j gap_j)`` over the rows ``j``, in one pass, added row by
    row as numpy's ``sum(axis=0)`` adds them (the same numbers)."""
    out[:] = 0.0
    for j in range(e.shape[0]):
        for i in range(e.shape[1]):
            square = e[j, i] * e[j, i]
            out[0, i] += e[j, i]
            out[1, i] += square
            out[2, i] += square * gaps[j, i]
            out[3, i] += e[j, i] * gaps[j, i]


@njit(cache=True)
def drawn_gaps(
    uniforms: np.ndarray,
    cdf_third: np.ndarray,
    third: np.ndarray,
    t1: np.ndarray,
    table: np.ndarray,
    lo: float,
    hi: float,
    xp: np.ndarray,
    fp: np.ndarray,
    guide: np.ndarray,
    gaps: np.ndarray,
    gaps_min: np.ndarray,
) -> None:
    """The drawn points in one pass: ``gaps[2 + j] = min(F^{-1}(uniforms[j] cdf_third), third) - t1``, ``gaps_min``
    lowered to them; ``F^{-1}`` linear in ``table`` (on a uniform grid of F) for ``lo <= y <= hi``, ``interp`` beyond."""
    cells, n = table.shape[0] - 1, uniforms.shape[1]
    tails = np.empty(uniforms.size, dtype=np.int64)  # the tails' flat indices: looked up together, after the bulk
    count = 0
    for j in range(uniforms.shape[0]):
        for i in range(n):
            y = uniforms[j, i] * cdf_third[i]
            if lo <= y <= hi:
                x = y * cells
                k = min(int(x), cells - 1)
                gap = min(table[k] + (x - k) * (table[k + 1] - table[k]), third[i]) - t1[i]
                gaps[2 + j, i] = gap
                gaps_min[i] = min(gaps_min[i], gap)
            else:
                tails[count] = j * n + i
                count += 1
    y, point = np.empty(count), np.empty(count)
    for c in range(count):
        y[c] = uniforms[tails[c] // n, tails[c] % n] * cdf_third[tails[c] % n]
    interp(y, xp, fp, guide, point)
    for c in range(count):
        j, i = tails[c] // n, tails[c] % n
        gap = min(point[c], third[i]) - t1[i]
        gaps[2 + j, i] = gap
        gaps_min[i] = min(gaps_min[i], gap)
