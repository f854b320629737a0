"""The initialisers of docs/method.md §4: Assumption 2 and the perturbations W0 + ε·G, whole or block-confined."""

import numpy as np
import pytest

from onenn.maths.init import assumption2, initial_weights

d, K = 8, 3
D = d + K + 1


def noise(noise_blocks: str, seed: int = 0, epsilon: float = 0.7) -> np.ndarray:
    """W − W0 for one draw."""
    W = initial_weights(d, K, 3.0, epsilon, noise_blocks, seed)
    return W - assumption2(d, K, 3.0)


def label_column_mask() -> np.ndarray:
    """Columns d .. d+K−1 of a D×D matrix (W12, W22, W32), written out by index."""
    mask = np.zeros((D, D), dtype=bool)
    for row in range(D):
        for col in range(d, d + K):
            mask[row, col] = True
    return mask


def test_assumption2_is_diag_zero_minus_sigma():
    W = assumption2(d, K, 2.5)
    expected = np.zeros((D, D))
    expected[D - 1, D - 1] = -2.5
    np.testing.assert_array_equal(W, expected)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_label_confined_noise_is_in_the_label_columns_and_nowhere_else(seed):
    G = noise("label", seed)
    inside = label_column_mask()
    assert np.all(G[inside] != 0), "every label-column entry gets noise"
    assert np.all(G[~inside] == 0), "no other entry moves"
    assert G[inside].size == D * K


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_other_confined_noise_avoids_the_label_columns(seed):
    G = noise("other", seed)
    inside = label_column_mask()
    assert np.all(G[inside] == 0)
    assert np.all(G[~inside] != 0)
    assert G[~inside].size == D * D - D * K


def test_whole_noise_covers_every_entry_and_is_gaussian_with_scale_epsilon():
    G = noise("all", 0, epsilon=1.0)
    assert np.all(G != 0)
    draws = np.concatenate([noise("all", s, epsilon=0.5).ravel() / 0.5 for s in range(30)])  # 4320 N(0, 1) draws
    assert abs(draws.mean()) < 4 / np.sqrt(draws.size)
    assert abs(draws.var() - 1) < 4 * np.sqrt(2 / draws.size)


def test_confined_noise_is_the_whole_noise_restricted():
    """Same seed, same G: the two confined variants split the whole perturbation between them."""
    np.testing.assert_array_equal(noise("label") + noise("other"), noise("all"))


def test_zero_epsilon_is_w0_and_bad_arguments_are_rejected():
    np.testing.assert_array_equal(noise("label", epsilon=0.0), 0.0)
    with pytest.raises(ValueError, match="noise_blocks must be one of all, label, other"):
        noise("labels")
    with pytest.raises(ValueError, match="epsilon"):
        noise("all", epsilon=-1.0)
