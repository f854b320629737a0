"""The reference model (onenn.maths.model) against the literal forms of tests/reference.py."""

import numpy as np
import pytest

from onenn.maths.family import family_matrix
from onenn.maths.model import embed, forward, simplex_code
from onenn.maths.prompts import make_test_set, nearest_neighbour
from tests.helpers import random_prompts
from tests.reference import embedding, output, simplex


@pytest.mark.parametrize("K", [2, 3, 5, 10])
def test_simplex_code_identities(K):
    U = simplex_code(K)
    gram = U @ U.T
    np.testing.assert_allclose(np.diag(gram), (K - 1) / K, atol=1e-15)
    np.testing.assert_allclose(gram[~np.eye(K, dtype=bool)], -1.0 / K, atol=1e-15)
    np.testing.assert_allclose(U.sum(axis=0), 0.0, atol=1e-15)
    with pytest.raises(ValueError, match="K must be >= 2"):
        simplex_code(1)


@pytest.mark.parametrize("N,d,K", [(1, 2, 2), (16, 8, 3), (7, 5, 10)])
def test_output_equals_full_attention(rng, N, d, K):
    """ℓ from the query column equals the label block of H softmax(H^T W H) formed in full."""
    x, classes = random_prompts(rng, 6, N, d, K)
    W = rng.standard_normal((d + K + 1, d + K + 1))
    q, ell = forward(W, x, simplex_code(K)[classes])
    np.testing.assert_allclose(q.sum(-1), 1.0, rtol=1e-14)
    for b in range(len(x)):
        np.testing.assert_allclose(ell[b], output(W, x[b], simplex(K)[classes[b]]), rtol=1e-12, atol=1e-14)


def test_embed_matches_reference(rng):
    x, classes = random_prompts(rng, 3, 4, 3, 3)
    Y = simplex_code(3)[classes]
    H = embed(x, Y)
    for b in range(3):
        np.testing.assert_array_equal(H[b].T, embedding(x[b], Y[b]))


def test_nearest_neighbour_is_the_closest_context_point(rng):
    x, _ = random_prompts(rng, 50, 9, 4, 2)
    closest = ((x[:, :-1] - x[:, -1:]) ** 2).sum(-1).argmin(1)  # the definition: the smallest distance
    np.testing.assert_array_equal(nearest_neighbour(x), closest)


@pytest.mark.parametrize("K", [2, 3, 5])
def test_family_with_large_gap_predicts_the_nearest_neighbour(K):
    """With W = diag(ξ1 I, 0, −ξ2), ξ1 and ξ2 − ξ1 large, attention concentrates on x_{i*}, whose class is the 1-NN
    label on separated prompts (the mechanism the paper proves)."""
    d, N = 8, 16
    test = make_test_set("separated", 500, d, N, K, 0.1, seed=7)
    x, classes, nn = test["x"], test["classes"], test["nn"]
    Y, target = simplex_code(K)[classes], classes[np.arange(len(nn)), nn]
    _, ell = forward(family_matrix(200.0, 400.0, d, K), x, Y)
    np.testing.assert_array_equal(ell.argmax(-1), target)
    _, ell_small = forward(family_matrix(0.1, 5.0, d, K), x, Y)  # with a small ξ1 the rule is far from 1-NN
    assert (ell_small.argmax(-1) == target).mean() < 0.9
