"""The CPU engine's compiled loops (numba, docs/method.md §4.2): SGD steps, fresh minibatches, a fixed set's gather,
on the ``(D, N+1, B)`` layout of ``onenn.training.cpu``; cached on disk (tests/unit/test_engine.py)."""

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from onenn.maths.losses import loss_code, require_loss

_f32 = np.float32
#: float32 exp (Cephes' ``expf``): 2^n · e^g, n = round(x·log2 e), e^g ≈ 1 + g + g²·P(g); within 2 ulp of exp
_LOG2E, _LN2_HI, _LN2_LO = _f32(1.44269504088896341), _f32(0.693359375), _f32(-2.12194440e-4)
_P0, _P1, _P2 = _f32(1.9875691500e-4), _f32(1.3981999507e-3), _f32(8.3334519073e-3)
_P3, _P4, _P5 = _f32(4.1665795894e-2), _f32(1.6666665459e-1), _f32(5.0000001201e-1)
_HALF, _ONE = _f32(0.5), _f32(1.0)
#: log of float32's smallest normal number 2^-126: exp of anything below it is about 2^-126
_EXP_MIN = _f32(-87.33654)
#: 2^n for n = -127..0, looked up (vectorises as a gather, where ldexp would be a library call)
_POW2 = np.ldexp(_f32(1.0), np.arange(-127, 1)).astype(np.float32)
_N_MIN, _N_MAX = _f32(-127.0), _f32(0.0)


def exp_nonpositive(x):
    """exp(x) for x ≤ 0 in x's precision: ``math.exp`` in float64, the polynomial above (it vectorises) in float32."""
    return math.exp(x)


@overload(exp_nonpositive, inline="always")
def _exp_nonpositive(x):
    return _expf if x == types.float32 else lambda x: math.exp(x)


def _expf(x):
    x = max(x, _EXP_MIN)
    n = np.floor(x * _LOG2E + _HALF)
    g = x - n * _LN2_HI - n * _LN2_LO
    p = ((((_P0 * g + _P1) * g + _P2) * g + _P3) * g + _P4) * g + _P5
    # the table's index kept in -127..0 whatever x is (a NaN compares false: it reads 2^-127, and g carries the NaN)
    n = n if n > _N_MIN else _N_MIN  # noqa: FURB136 (not max: the comparison decides what a NaN becomes)
    n = n if n < _N_MAX else _N_MAX  # noqa: FURB136
    return (p * g * g + g + _ONE) * _POW2[np.int32(n) + 127]


#: the losses ``_loss_gradient`` has a branch for; each branch is chosen by the loss's code in ``onenn.maths.losses``
IMPLEMENTED = ("square", "cross_entropy", "mixture", "squentropy")
#: their codes, in that order: constants of the compiled kernels
CODES = tuple(loss_code(name) for name in IMPLEMENTED)
SQUARE, CROSS_ENTROPY, MIXTURE, SQUENTROPY = CODES


def loss_branch(name: str) -> int:
    """The code ``sgd_steps`` takes for loss ``name``; raises if the loops lack it, or if numba's cache is stale."""
    branch = "_loss_gradient in onenn/training/cpu_steps.py"
    code = require_loss(name, IMPLEMENTED, "the CPU engine's compiled loops (numba)", branch)
    if _compiled_codes() != CODES:
        raise RuntimeError(  # numba's cache sees changes to this file only
            f"numba's cache of onenn/training/cpu_steps.py holds loss codes {_compiled_codes()} from an older "
            f"onenn/maths/losses.py (now {CODES}); delete the cache "
            "(onenn/training/__pycache__/cpu_steps.*.nb[ci], or under NUMBA_CACHE_DIR)"
        )
    return code


@njit(cache=True)
def _compiled_codes():
    """The loss codes as the cached kernels were compiled with them."""
    return CODES


def _check(name: str, ok: bool, need: str, got: str) -> None:
    """Raise before a compiled kernel runs: it does not check its arguments, and would read past its buffers."""
    if not ok:
        raise ValueError(f"{name} must {need}; got {got}")


def _check_block(function: str, H, arrays: dict) -> tuple[int, int, int, int]:
    """The shape (S, D, T, B) of a block ``H``, checked, with every one of ``arrays`` shaped (S,) or (S, ..., B)."""
    shape = tuple(getattr(H, "shape", ()))
    _check(f"{function}: H", len(shape) == 4, "be a block of minibatches (S, D, T, B)", f"shape {shape}")
    S, B = shape[0], shape[3]
    for name, array in arrays.items():
        got = tuple(getattr(array, "shape", ()))
        fits = got == (S,) if len(got) == 1 else len(got) > 1 and got[0] == S and got[-1] == B
        _check(f"{function}: {name}", fits, f"have the block's {S} steps (and its {B} prompts last)", f"shape {got}")
    return shape


def sgd_steps(W, H, U, target_class, G, L, first, last, lr_over_batch, loss, c, v, s, a, r, norm):
    """``_sgd_steps`` after checking the arguments it indexes with."""
    S, D, T, B = _check_block("sgd_steps", H, {"U": U, "target_class": target_class, "G": G, "L": L})
    need = f"satisfy 0 <= first <= last <= {S} (the block)"
    _check("sgd_steps: first, last", 0 <= first <= last <= S, need, f"first={first}, last={last}")
    _check("sgd_steps: W", W.shape == (D, D), f"be (D, D) = ({D}, {D}), as H", f"shape {W.shape}")
    shapes = {"v": (D, B), "s": (T, B), "a": (T, B), "r": (D, B), "norm": (B,)}
    for (name, shape), array in zip(shapes.items(), (v, s, a, r, norm)):
        _check(f"sgd_steps: {name}", array.shape == shape, f"be {shape}", f"shape {array.shape}")
    _sgd_steps(W, H, U, target_class, G, L, first, last, lr_over_batch, loss, c, v, s, a, r, norm)


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _sgd_steps(W, H, U, target_class, G, L, first, last, lr_over_batch, loss, c, v, s, a, r, norm):
    """SGD steps ``first..last-1`` of a prepared block, ``W`` in place; writes ``G`` = ∂loss/∂ℓ and ``L`` (S,) the
    minibatch losses; ``v, s, a, r, norm`` scratch."""
    D, T, B = H.shape[1], H.shape[2], H.shape[3]
    m = U.shape[1]  # the label width
    d = D - m - 1
    for i in range(first, last):
        Hi, g = H[i], G[i]
        # v = W h_{N+1}
        for k in range(D):
            for b in range(B):
                v[k, b] = 0
            for col in range(D):
                w = W[k, col]
                for b in range(B):
                    v[k, b] += w * Hi[col, T - 1, b]
        # s_j = h_j^T v, and its maximum over j (the softmax's shift)
        for b in range(B):
            norm[b] = -np.inf
        for j in range(T):
            for b in range(B):
                s[j, b] = 0
            for k in range(D):
                for b in range(B):
                    s[j, b] += Hi[k, j, b] * v[k, b]
            for b in range(B):
                norm[b] = max(norm[b], s[j, b])
        # q = softmax_j(s), into s (the sum into v's first row)
        for j in range(T):
            for b in range(B):
                s[j, b] = exp_nonpositive(s[j, b] - norm[b])
        for b in range(B):
            v[0, b] = 0
        for j in range(T):
            for b in range(B):
                v[0, b] += s[j, b]
        for j in range(T):
            for b in range(B):
                s[j, b] /= v[0, b]
        # ℓ = Σ_j q_j y_j, into g; then g = ∂loss/∂ℓ, and the minibatch loss
        for k in range(m):
            for b in range(B):
                g[k, b] = 0
            for j in range(T):
                for b in range(B):
                    g[k, b] += Hi[d + k, j, b] * s[j, b]
        L[i] = _loss_gradient(g, U[i], target_class[i], loss, c, norm)
        # p_j = q_j a_j with a_j = ⟨y_j, g⟩, into a; ⟨ℓ, g⟩ = Σ_j p_j, into norm
        for b in range(B):
            norm[b] = 0
        for j in range(T):
            for b in range(B):
                a[j, b] = 0
            for k in range(m):
                for b in range(B):
                    a[j, b] += Hi[d + k, j, b] * g[k, b]
            for b in range(B):
                a[j, b] *= s[j, b]
                norm[b] += a[j, b]
        # ∂loss/∂s_j = p_j − q_j ⟨ℓ, g⟩, into a; r = Σ_j ∂loss/∂s_j h_j
        for j in range(T):
            for b in range(B):
                a[j, b] -= s[j, b] * norm[b]
        for k in range(D):
            for b in range(B):
                r[k, b] = 0
            for j in range(T):
                for b in range(B):
                    r[k, b] += a[j, b] * Hi[k, j, b]
        _rank_one_update(W, r, Hi, lr_over_batch)


@njit(cache=True, error_model="numpy")
def _loss_gradient(g, u, target_class, loss, c, loss_b):
    """ℓ (m, B) in ``g`` replaced by ∂loss/∂ℓ (``onenn.maths.losses``); returns the minibatch's mean loss. ``u``: the
    targets u_{c_{i*}}, ``target_class`` their classes (all but the square loss: ``m = K``); ``loss_b`` scratch."""
    m, B = g.shape
    if loss != SQUARE and loss != CROSS_ENTROPY and loss != MIXTURE and loss != SQUENTROPY:
        raise ValueError("_loss_gradient: a loss code without a branch (loss_branch checks a run's loss first)")
    if loss == SQUARE:  # ½‖ℓ − u‖², gradient ℓ − u
        for b in range(B):
            loss_b[b] = 0
        for k in range(m):
            for b in range(B):
                g[k, b] -= u[k, b]
                loss_b[b] += g[k, b] * g[k, b]
        total = loss_b[0] - loss_b[0]  # 0 in g's precision
        for b in range(B):
            total += loss_b[b]
        return total * 0.5 / B
    total = 0.0
    K = m
    for b in range(B):
        # cross entropy from log p = ℓ − max ℓ − log Σ exp(ℓ − max ℓ); gradient p − e_{c*}
        target = target_class[b]
        top = g[0, b]
        for k in range(1, K):
            top = max(top, g[k, b])
        sum_exp = g[0, b] - g[0, b]
        for k in range(K):
            sum_exp += math.exp(g[k, b] - top)
        log_sum = math.log(sum_exp)
        square = g[0, b] - g[0, b]
        penalty = cross_entropy = square
        for k in range(K):
            ell, log_p = g[k, b], g[k, b] - top - log_sum
            grad_ce = math.exp(log_p) - (k == target)
            if k == target:
                cross_entropy = -log_p
            if loss == CROSS_ENTROPY:
                g[k, b] = grad_ce
            elif loss == MIXTURE:  # (1 − c) square + c cross entropy
                residual = ell - u[k, b]
                square += residual * residual
                g[k, b] = (1 - c) * residual + c * grad_ce
            elif loss == SQUENTROPY:  # cross entropy + Σ_{k≠c*} ℓ_k² / (K − 1)
                if k != target:
                    penalty += ell * ell
                    g[k, b] = grad_ce + 2 * ell / (K - 1)
                else:
                    g[k, b] = grad_ce
        if loss == CROSS_ENTROPY:
            total += cross_entropy
        elif loss == MIXTURE:
            total += (1 - c) * 0.5 * square + c * cross_entropy
        elif loss == SQUENTROPY:
            total += cross_entropy + penalty / (K - 1)
    return total / B


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _rank_one_update(W, r, Hi, lr_over_batch):
    """W −= lr_over_batch · Σ_b r_b h_{N+1,b}^T, the sum over the minibatch in vector lanes (``reassoc``)."""
    D, T, B = Hi.shape
    for k in range(D):
        for col in range(D):
            total = W[k, col] - W[k, col]  # 0 in W's precision
            for b in range(B):
                total += r[k, b] * Hi[col, T - 1, b]
            W[k, col] -= lr_over_batch * total


def prepare_fresh(H, C, U, target_class, n, code_on, code_off, norm, best):
    """``_prepare_fresh`` after checking the arguments it indexes with."""
    S, D, T, B = _check_block("prepare_fresh", H, {"C": C, "U": U, "target_class": target_class})
    _check("prepare_fresh: n", 0 <= n <= S, f"lie in 0..{S} (the block)", str(n))
    _check("prepare_fresh: C", C.shape[1] == T - 1, f"hold the N = {T - 1} context points of H", f"shape {C.shape}")
    need = "have fewer rows (K) than H (D = d + K + 1)"
    _check("prepare_fresh: U", U.shape[1] < D, need, f"shape {U.shape}")
    for name, array in (("norm", norm), ("best", best)):
        _check(f"prepare_fresh: {name}", array.shape == (B,), f"be ({B},)", f"shape {array.shape}")
    _prepare_fresh(H, C, U, target_class, n, code_on, code_off, norm, best)


@njit(cache=True, error_model="numpy")
def _prepare_fresh(H, C, U, target_class, n, code_on, code_off, norm, best):
    """The first ``n`` fresh minibatches, in place: inputs onto the sphere, the codes of the classes ``C`` into the
    label rows, the 1-NN class into ``target_class`` and its code into ``U``; ``norm``, ``best`` scratch."""
    D, T, B = H.shape[1], H.shape[2], H.shape[3]
    K = U.shape[1]  # fresh draws are multiclass: the label width is the number of classes
    d, N = D - K - 1, T - 1
    for i in range(n):
        X = H[i]  # the inputs are its first d rows, the label codes the next K
        # x / ‖x‖: Σ_k x_k², then x · (1/√·)
        for t in range(T):
            _column_products(X, d, t, t, norm)
            for b in range(B):
                norm[b] = 1 / math.sqrt(norm[b])
            for k in range(d):
                for b in range(B):
                    X[k, t, b] *= norm[b]
        # u_c = e_c − 1/K of each context point's class
        for c in range(K):
            for j in range(N):
                for b in range(B):
                    X[d + c, j, b] = code_on if C[i, j, b] == c else code_off
        # 1-NN: the first context point with the largest ⟨x_j, x_{N+1}⟩
        for j in range(N):
            _column_products(X, d, j, N, norm)
            for b in range(B):
                if j == 0 or norm[b] > best[b]:
                    best[b] = norm[b]
                    target_class[i, b] = C[i, j, b]
        for c in range(K):
            for b in range(B):
                U[i, c, b] = code_on if target_class[i, b] == c else code_off


@njit(cache=True, error_model="numpy", inline="always")
def _column_products(X, d, t, u, out):
    """``out[b] = Σ_{k<d} X[k, t, b] X[k, u, b]``, summed over the input coordinates in order."""
    for b in range(out.shape[0]):
        out[b] = 0
    for k in range(d):
        for b in range(out.shape[0]):
            out[b] += X[k, t, b] * X[k, u, b]


def gather_block(H_set, U_set, index, H, U, n):
    """``_gather_block`` after checking the arguments it indexes with."""
    S, D, T, B = _check_block("gather_block", H, {"U": U})
    _check("gather_block: n", 0 <= n <= S, f"lie in 0..{S} (the block)", str(n))
    _check("gather_block: H_set", H_set.shape[1:] == (D, T), f"be (n_set, {D}, {T}), as H", f"shape {H_set.shape}")
    want = (H_set.shape[0], U.shape[1])
    _check("gather_block: U_set", U_set.shape == want, f"be {want}", f"shape {U_set.shape}")
    used = index[: n * B]
    _check("gather_block: index", len(used) == n * B, f"hold n·B = {n * B} prompts", f"{len(index)}")
    if len(used):  # the bounds found once, and put into words only on failure
        lo, hi = int(used.min()), int(used.max())
        if not 0 <= lo <= hi < H_set.shape[0]:
            _check("gather_block: index", False, f"lie in 0..{H_set.shape[0] - 1} (the set)", f"{lo}..{hi}")
    _gather_block(H_set, U_set, index, H, U, n)


@intrinsic
def _prefetch(typingctx, array, offset):
    """Prefetch element ``offset`` of the contiguous ``array`` (``llvm.prefetch``: a hint, no effect on results)."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        byte = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32]), "llvm.prefetch.p0"
        )
        address = builder.bitcast(builder.gep(data, [args[1]]), byte)
        builder.call(hint, [address, i32(0), i32(3), i32(1)])  # read, keep in all levels, data
        return context.get_dummy_value()

    return types.none(array, types.int64), codegen


@njit(cache=True)
def _fetch_rows(flat, rows, R):
    """Prefetch the rows ``rows`` (each ``R`` elements) of the flattened set ``flat``, a cache line at a time."""
    for b in range(rows.shape[0]):
        start = np.uint64(rows[b]) * np.uint64(R)
        for o in range(0, R, 16):
            _prefetch(flat, np.int64(start + np.uint64(o)))


@njit(cache=True)
def _gather_block(H_set, U_set, index, H, U, n):
    """Minibatch ``i < n``: the prompts ``index[i·B : (i+1)·B]`` of the set (the next minibatch's rows prefetched)."""
    D, T, B = H.shape[1], H.shape[2], H.shape[3]
    m = U.shape[1]
    flat = H_set.reshape(H_set.size)
    if n > 0:
        _fetch_rows(flat, index[:B], D * T)
    for i in range(n):
        rows = index[i * B : (i + 1) * B]
        if i + 1 < n:
            _fetch_rows(flat, index[(i + 1) * B : (i + 2) * B], D * T)
        for k in range(D):
            for t in range(T):
                for b in range(B):
                    H[i, k, t, b] = H_set[np.uint64(rows[b]), k, t]
        for k in range(m):
            for b in range(B):
                U[i, k, b] = U_set[np.uint64(rows[b]), k]
