import numpy as np
import pytest

from onenn.base import columns
from onenn.maths import prompts
from onenn.maths.prompts import make_test_set


@pytest.mark.parametrize("K,delta", [(2, 0.1), (3, 0.1), (5, 0.5), (3, 1.5)])
def test_separated_prompts_satisfy_the_margin(K, delta):
    d, N = 8, 16
    t = make_test_set("separated", 2000, d, N, K, delta, seed=3)
    x, classes, nn = t["x"], t["classes"], t["nn"]
    rows = np.arange(len(nn))
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0, atol=1e-12)
    sq = ((x[:, :-1] - x[:, -1:]) ** 2).sum(-1)
    # the query's nearest neighbour is at i*
    assert np.array_equal(sq.argmin(1), nn)
    # margin event A_δ*: every point of another class is δ* farther, in squared distance, than x_{i*}
    other = classes != classes[rows, nn][:, None]
    gap = sq - sq[rows, nn][:, None]
    assert (gap[other] >= delta).all()
    # i* is uniform over 1..N
    counts = np.bincount(nn, minlength=N)
    assert counts.min() > 0.5 * len(nn) / N


def test_uniform_prompts_lie_on_the_sphere_and_are_isotropic():
    d, N = 8, 16
    t = make_test_set("uniform", 4000, d, N, 3, None, seed=1)
    x = t["x"]
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0, atol=1e-12)
    # E[x x^T] = I/d for the uniform distribution on S^{d-1}
    second = np.einsum("bjd,bje->de", x, x) / (x.shape[0] * x.shape[1])
    np.testing.assert_allclose(second, np.eye(d) / d, atol=0.01)
    assert np.array_equal(t["nn"], np.einsum("bjd,bd->bj", x[:, :-1], x[:, -1]).argmax(1))
    assert set(np.unique(t["classes"])) == {0, 1, 2}


def test_same_seed_same_prompts_different_seed_different_prompts():
    a = make_test_set("separated", 50, 4, 5, 3, 0.1, seed=11)
    b = make_test_set("separated", 50, 4, 5, 3, 0.1, seed=11)
    c = make_test_set("separated", 50, 4, 5, 3, 0.1, seed=12)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(a["x"], c["x"])


def test_bad_test_set_and_margin_are_rejected():
    with pytest.raises(ValueError, match="test_set must be one of uniform, separated"):
        make_test_set("train", 5, 4, 5, 3, 0.1, seed=1)
    with pytest.raises(ValueError, match=r"delta \(the margin"):
        make_test_set("separated", 5, 4, 5, 3, 4.5, seed=1)


def test_the_prompt_sets_drawn_are_the_test_sets_the_tables_name():
    """onenn.maths.prompts cannot import onenn.base (layers), so it names the sets it draws itself: the same names, in
    the same order, as the ``test_set`` column's (onenn.base.columns)."""
    assert prompts.TEST_SETS == columns.TEST_SETS
    assert prompts.BINARY_TEST_SETS == columns.BINARY_TEST_SETS
