"""The thresholds on ``sigma`` of docs/method.md §7 and Lemma 12's invariant."""

from __future__ import annotations

import math

from onenn.theory.reduced.checks import check_integer

#: the thresholds a config may name as ``sigma``
SIGMA_RULES = ("theorem1", "lemma12")


def sigma_threshold_theorem1(N: int, d: int) -> float:
    """Theorem 1's explicit part of the bound: ``2 max(log(N d), -log(1 - (N sqrt(d))^(-1/d)))``.

    The theorem's third term has an unknown constant and is omitted.
    """
    check_integer("N", N)
    check_integer("d", d, minimum=2)
    return 2.0 * max(math.log(N * d), -math.log(1.0 - (N * math.sqrt(d)) ** (-1.0 / d)))


def lemma12_a(N: int, d: int) -> float:
    """``a_{N,d} = (2 N sqrt(d))^(-2/(d-3))`` (needs ``d >= 4``)."""
    check_integer("N", N)
    check_integer("d", d, minimum=4)
    return (2.0 * N * math.sqrt(d)) ** (-2.0 / (d - 3))


def sigma_threshold_lemma12(N: int, d: int) -> float:
    """Lemma 12's bound ``3 log(2 N^4 d / a_{N,d})`` (needs ``d >= 4``)."""
    return 3.0 * math.log(2.0 * N**4 * d / lemma12_a(N, d))


def resolve_sigma(sigma: float | str, N: int, d: int) -> float:
    """A number, or the threshold of docs/method.md §7 it names: ``theorem1`` (its explicit part) or ``lemma12``."""
    if sigma == "theorem1":
        return sigma_threshold_theorem1(N, d)
    if sigma == "lemma12":
        return sigma_threshold_lemma12(N, d)
    if isinstance(sigma, (int, float)) and not isinstance(sigma, bool) and math.isfinite(sigma):
        return float(sigma)
    raise ValueError(f"sigma must be a finite number or one of {', '.join(SIGMA_RULES)}; got {sigma!r}")
