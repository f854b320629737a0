"""Experiment 2's estimator (onenn.theory.scaling): the numpy model it uses (onenn.maths.model), the ratio and its
interval, the points."""

import numpy as np
import pytest

from onenn.maths.model import forward
from onenn.theory.scaling import (
    Point,
    paired_losses,
    points,
    ratio_estimate,
    scaling_table,
    square_losses,
)
from tests.reference import output, simplex

PANELS = {
    "by_K": {"xi": [[2, 5]], "K": [2, 3], "prompts": 300},
    "grid": {"xi": [[1, 2], [3, 6]], "K": [5], "prompts": 200},
}


@pytest.mark.parametrize("m", [1, 4])
def test_numpy_model_matches_the_full_attention_reference(rng, m):
    """ℓ and the loss from the query column equal the literal H softmax(HᵀWH) on a random W (not the family)."""
    d, N, n = 5, 7, 4
    x = rng.standard_normal((n, N + 1, d))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    Y = simplex(m)[rng.integers(0, m, size=(n, N))] if m > 1 else rng.choice([-1.0, 1.0], size=(n, N, 1))
    W = rng.standard_normal((d + m + 1, d + m + 1))
    q, _ = forward(W, x, Y)
    np.testing.assert_allclose(q.sum(axis=1), 1.0, rtol=1e-14)
    target = Y[:, 0]
    losses = square_losses(W, x, Y, target)
    for b in range(n):
        ell = output(W, x[b], Y[b])
        np.testing.assert_allclose(np.einsum("j,jm->m", q[b, :-1], Y[b]), ell, rtol=1e-12, atol=1e-14)
        assert losses[b] == pytest.approx(0.5 * np.sum((ell - target[b]) ** 2), rel=1e-12)


def test_delta_method_standard_error_matches_the_spread_over_replicates():
    """The delta-method se of one sample agrees with the standard deviation of the ratio over 60
    independent samples (an estimate that does not use the formula) within 25%."""
    n, reps = 1000, 60
    ratios, ses = [], []
    for r in range(reps):
        mc, binary = paired_losses(2.0, 5.0, 3, n, 8, 16, np.random.default_rng([7, r]))
        est = ratio_estimate(mc, binary, 0.95)
        ratios.append(est["ratio"])
        ses.append(est["ratio_se"])
    assert np.std(ratios, ddof=1) == pytest.approx(np.mean(ses), rel=0.25)


def test_ratio_estimate_of_known_pairs():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    est = ratio_estimate(a, 2 * a, 0.9)  # b = 2a: the ratio is 1/2 with no spread at all
    assert est["ratio"] == pytest.approx(0.5)
    assert est["ratio_se"] == pytest.approx(0.0, abs=1e-12)
    assert est["L_MC"] == 2.5 and est["L_bin"] == 5.0
    assert est["L_MC_se"] == pytest.approx(np.std(a, ddof=1) / 2)
    b = np.array([2.0, 1.0, 4.0, 3.0])
    est = ratio_estimate(a, b, 0.95)
    assert est["ratio_upper"] - est["ratio"] == pytest.approx(1.959964 * est["ratio_se"], rel=1e-6)
    with pytest.raises(ValueError, match="ci_level"):
        ratio_estimate(a, b, 1.0)


def test_points_are_the_product_of_each_panel():
    assert points(PANELS) == [
        Point("by_K", 2.0, 5.0, 2, 300),
        Point("by_K", 2.0, 5.0, 3, 300),
        Point("grid", 1.0, 2.0, 5, 200),
        Point("grid", 3.0, 6.0, 5, 200),
    ]
    with pytest.raises(ValueError, match=r"panels\.p needs the keys xi, K and prompts"):
        points({"p": {"xi": [[1, 2]], "K": [3]}})
    with pytest.raises(ValueError, match=r"panels\.p\.xi must hold \[xi1, xi2\] pairs"):
        points({"p": {"xi": [[1, 2, 3]], "K": [3], "prompts": 10}})
    with pytest.raises(ValueError, match=r"panels\.p\.K must hold integers >= 2"):
        points({"p": {"xi": [[1, 2]], "K": [1], "prompts": 10}})


def test_scaling_table_is_typed_reproducible_and_seed_dependent():
    settings = {"d": 8, "N": 16, "seed": 3, "ci_level": 0.95, "panels": PANELS}
    a = scaling_table(settings, "exp")
    b = scaling_table(settings, "exp")
    c = scaling_table({**settings, "seed": 4}, "exp")
    assert len(a) == 4 and set(a["experiment"]) == {"exp"}
    for column in (
        "panel",
        "xi1",
        "xi2",
        "K",
        "prompts",
        "L_MC",
        "L_bin",
        "ratio",
        "ratio_lower",
        "ratio_upper",
        "reference",
    ):
        assert column in a, column
    assert a["K"].dtype == "int64" and a["ratio"].dtype == "float64"
    np.testing.assert_array_equal(a["reference"], [(k - 1) / k for k in a["K"]])
    assert (a["ratio_lower"] < a["ratio"]).all() and (a["ratio"] < a["ratio_upper"]).all()
    assert a.equals(b) and not a["ratio"].equals(c["ratio"])
