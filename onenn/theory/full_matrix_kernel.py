"""The numba port of ``full_matrix.full_loss_grad``, one pass over the prompts with ``reduced.compiled``'s ``exp``;
held to the definition by tests/unit/test_audit.py."""

from __future__ import annotations

import numpy as np
from numba import njit

from onenn.theory.reduced.compiled import _exp_nonpositive

#: the sums over tokens and coordinates may be reordered and multiply-adds fused, so that they vectorise (the
#: exponential is compiled apart, without these flags: its reduction ``(x - k ln2_hi) - k ln2_lo`` must keep its order)
_SUMS = {"reassoc", "contract"}


@njit(cache=True)
def _softmax_exp(shifted: np.ndarray, q: np.ndarray, bits1: np.ndarray, bits2: np.ndarray) -> None:
    _exp_nonpositive(shifted, q, bits1, bits2, shifted.shape[0])


@njit(cache=True, fastmath=_SUMS)
def loss_grad(
    A: np.ndarray, x: np.ndarray, z_query: np.ndarray, star: np.ndarray, with_loss: bool, grad: np.ndarray
) -> float:
    """Fill ``grad`` ((d+1, d+1)) with the mean gradient over the prompts and return the mean loss (NaN unless
    ``with_loss``). ``x``: (n, N+1, d), the query last; ``z_query``: (n, d+1); ``star``: (n,), ``i*`` per prompt."""
    prompts, tokens, d = x.shape
    v = np.empty(d + 1)
    q, shifted = np.empty(tokens), np.empty(tokens)
    bits1, bits2 = np.empty(tokens, dtype=np.int64), np.empty(tokens, dtype=np.int64)
    ds = np.empty(tokens)
    r_x = np.empty(d)
    grad[:, :] = 0.0
    loss = 0.0
    for b in range(prompts):
        for a in range(d + 1):  # v = A z_q
            acc = 0.0
            for c in range(d + 1):
                acc += A[a, c] * z_query[b, c]
            v[a] = acc
        for j in range(tokens):  # scores: x-part of every token, the query's own term on the last
            acc = 0.0
            for c in range(d):
                acc += x[b, j, c] * v[c]
            q[j] = acc
        q[tokens - 1] += v[d]
        top = q.max()
        for j in range(tokens):
            shifted[j] = q[j] - top
        _softmax_exp(shifted, q, bits1, bits2)
        total = 0.0
        for j in range(tokens):
            total += q[j]
        q /= total
        i_star = star[b]
        q_star = q[i_star]
        sum_sq_context = 0.0
        for j in range(tokens - 1):
            sum_sq_context += q[j] * q[j]
        gbar = sum_sq_context - q_star  # sum_k q_k g_k, g_k = q_k - [k = i*] on the context, 0 on the query
        for j in range(tokens):
            ds[j] = q[j] * (q[j] - gbar)
        ds[i_star] -= q_star
        ds[tokens - 1] = -q[tokens - 1] * gbar
        r_x[:] = 0.0
        for j in range(tokens):
            for c in range(d):
                r_x[c] += ds[j] * x[b, j, c]
        for a in range(d):
            for c in range(d + 1):
                grad[a, c] += r_x[a] * z_query[b, c]
        for c in range(d + 1):
            grad[d, c] += ds[tokens - 1] * z_query[b, c]
        if with_loss:
            r = 1.0 - q_star
            loss += 0.5 * (r * r + sum_sq_context - q_star * q_star)
    grad /= prompts
    return loss / prompts if with_loss else np.nan
