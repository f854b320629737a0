"""Lemma 1 and Lemma 2 of docs/method.md §4, checked numerically on sampled prompts."""

import math

import numpy as np
import pytest

from onenn.maths.family import family_matrix, xi
from onenn.maths.init import assumption2
from onenn.maths.losses import Loss
from onenn.maths.model import forward, simplex_code, weight_gradient
from onenn.maths.prompts import nearest_neighbour, uniform_prompts
from onenn.theory.reduced.loss import reduced_loss
from onenn.theory.scaling import paired_losses, square_losses
from tests.helpers import random_prompts


def gradient_at_w0(n: int, loss: Loss, seed: int, d: int = 8, N: int = 16, K: int = 3) -> np.ndarray:
    """The full-matrix gradient of the loss at W0 = diag(0, −3), on n prompts of Assumption 1: (D, D)."""
    x, classes = random_prompts(np.random.default_rng(seed), n, N, d, K)
    codes = simplex_code(K)
    Y, target = codes[classes], classes[np.arange(n), nearest_neighbour(x)]
    q, ell = forward(assumption2(d, K, 3.0), x, Y)
    _, g = loss(ell, target, codes[target])
    return weight_gradient(x, Y, q, ell, g)


@pytest.mark.parametrize("loss", [Loss("square"), Loss("cross_entropy"), Loss("squentropy")], ids=lambda l: l.name)
def test_lemma1_off_family_part_of_the_gradient_at_w0_vanishes_with_the_sample(loss):
    """The population gradient at W0 lies on the family diag(a·I, 0, b) (Lemma 1), so on n prompts the
    off-family part is a mean of n zero-mean terms: its norm falls like 1/sqrt(n) (by 8 from n = 1000 to
    64 000), while the on-family part converges to a non-zero limit."""
    d, K = 8, 3
    parts = {}
    for n in (1_000, 64_000):
        G = gradient_at_w0(n, loss, seed=n)
        on = family_matrix(*xi(G, d), d, K)  # the Frobenius projection onto the family
        parts[n] = (np.linalg.norm(on), np.linalg.norm(G - on), G)
    (on_small, off_small, _), (on_large, off_large, G_large) = parts[1_000], parts[64_000]
    assert 5.0 < off_small / off_large < 12.0  # sqrt(64) = 8; ‖off‖² sums ~100 entries, so it concentrates
    assert off_large < 0.2 * on_large  # about 1/9 at this n
    assert 0.8 < on_large / on_small < 1.25  # the on-family part does not shrink
    assert G_large[:d, :d].trace() < 0  # and it points to a growing ξ1 (descent raises the diagonal)


def test_lemma2_k2_is_exact_per_prompt():
    """With K = 2 the simplex code is u_c = (y/2)·(1, −1) for y = ±1, so ℓ_MC = (ℓ_bin/2)·(1, −1) and every
    prompt has L_MC = ½·L_bin exactly (not only on average)."""
    d, N = 8, 16
    p = uniform_prompts(500, d, N, 2, np.random.default_rng(0))
    x, classes, nn = p["x"], p["classes"], p["nn"]
    rows = np.arange(len(nn))
    y = (1.0 - 2.0 * classes)[..., None]  # class 0 -> +1, class 1 -> −1
    codes = np.eye(2) - 0.5
    for xi1, xi2 in ((1.0, 2.0), (5.0, 8.0)):
        mc = square_losses(family_matrix(xi1, xi2, d, 2), x, codes[classes], codes[classes[rows, nn]])
        binary = square_losses(family_matrix(xi1, xi2, d, 1), x, y, y[rows, nn])
        np.testing.assert_allclose(mc, 0.5 * binary, rtol=1e-12)


@pytest.mark.parametrize("xi1,xi2,K", [(2.0, 5.0, 3), (5.0, 8.0, 5), (1.0, 2.0, 10)])
def test_lemma2_multiclass_loss_is_k_minus_1_over_k_of_the_binary_loss(xi1, xi2, K):
    """On sampled prompts the two losses (independent labels, same inputs) have the ratio (K−1)/K within
    four delta-method standard errors."""
    mc, binary = paired_losses(xi1, xi2, K, 20_000, 8, 16, np.random.default_rng(K))
    ratio = mc.mean() / binary.mean()
    cov = np.cov(mc, binary)
    se = math.sqrt((cov[0, 0] - 2 * ratio * cov[0, 1] + ratio**2 * cov[1, 1]) / len(mc)) / binary.mean()
    assert abs(ratio - (K - 1) / K) < 4 * se
    assert se < 0.01


@pytest.mark.parametrize("K", [3, 7])
def test_lemma2_sampled_classes_against_the_label_free_binary_loss(K):
    """On the same inputs, the multiclass loss with sampled classes averages to (K−1)/K times the binary loss
    with the labels integrated out in closed form (onenn.theory.reduced.loss): only label noise separates them."""
    d, N, xi1, xi2 = 8, 16, 3.0, 6.0
    p = uniform_prompts(20_000, d, N, K, np.random.default_rng(K))
    x, classes, nn = p["x"], p["classes"], p["nn"]
    codes = np.eye(K) - 1.0 / K
    mc = square_losses(family_matrix(xi1, xi2, d, K), x, codes[classes], codes[classes[np.arange(len(nn)), nn]])
    t = np.clip(np.einsum("njd,nd->nj", x[:, :-1], x[:, -1]), -1.0, 1.0)
    closed = reduced_loss(xi1, xi2, t)
    se = mc.std(ddof=1) / math.sqrt(len(mc))
    assert abs(mc.mean() - (K - 1) / K * closed) < 4 * se
