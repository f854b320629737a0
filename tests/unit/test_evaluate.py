"""The evaluation (onenn.analysis.evaluate) against metrics written out here from the literal model of
tests/reference.py and the losses' definitions; the reference losses' values against their formulas."""

import math

import numpy as np
import pandas as pd
import pytest

from onenn.analysis import evaluate as E
from onenn.maths.family import family_matrix
from onenn.maths.losses import LOSSES, Loss
from onenn.maths.model import forward
from onenn.maths.prompts import make_binary_set, make_test_set
from tests.reference import output, simplex

RTOL = 1e-12


def literal_loss(loss: str, c: float, ell: np.ndarray, target: int, K: int) -> float:
    """One prompt's loss from docs/method.md §2, written out."""
    square = 0.5 * sum((ell[k] - simplex(K)[target, k]) ** 2 for k in range(K))
    ce = math.log(sum(math.exp(v) for v in ell)) - ell[target]
    off = sum(ell[k] ** 2 for k in range(K) if k != target) / (K - 1)
    return {"square": square, "cross_entropy": ce, "mixture": (1 - c) * square + c * ce, "squentropy": ce + off}[loss]


def literal_metrics(W: np.ndarray, data: dict[str, np.ndarray], K: int, loss: str, c: float) -> dict[str, float]:
    """The metrics of docs/method.md §5 from the literal model, prompt by prompt."""
    per_prompt: dict[str, list[float]] = {"logit_error": [], "accuracy": [], "test_loss": []}
    for x, classes, nn in zip(data["x"], data["classes"], data["nn"], strict=True):
        ell, target = output(W, x, simplex(K)[classes]), int(classes[nn])
        per_prompt["logit_error"].append(float(((ell - simplex(K)[target]) ** 2).sum()))
        per_prompt["accuracy"].append(float(np.argmax(ell) == target))
        per_prompt["test_loss"].append(literal_loss(loss, c, ell, target, K))
    n = len(data["x"])
    means = {name: float(np.mean(v)) for name, v in per_prompt.items()}
    return means | {f"{name}_se": float(np.std(v, ddof=1) / n**0.5) for name, v in per_prompt.items()}


def random_W(rng: np.random.Generator, d: int, K: int, scale: float = 1.0) -> np.ndarray:
    D = d + K + 1
    return family_matrix(2.0, 3.0, d, K) + scale * rng.standard_normal((D, D))


@pytest.mark.parametrize("K", [2, 3, 5])
@pytest.mark.parametrize("loss", LOSSES)
def test_class_metrics_equal_the_literal_model_and_loss(K, loss):
    rng = np.random.default_rng(K)
    d, N = 5, 12
    data = make_test_set("uniform", 60, d, N, K, None, K)
    for scale in (0.3, 3.0):  # near the family, and far from it (large logits: the softmax shift matters)
        W = random_W(rng, d, K, scale)
        want = literal_metrics(W, data, K, loss, 0.3)
        got = E.class_metrics(W, *E.class_arrays(data, K), loss, 0.3)
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == pytest.approx(want[key], rel=1e-10, abs=1e-300), (key, scale)


def test_the_standard_errors_are_the_sample_sd_over_the_prompts_over_root_n():
    """On 7 prompts, written out: ``√(Σ(v − v̄)²/(n − 1)/n)`` for the logit error and the loss; for the accuracy the
    binomial ``√(p(1 − p)/n)·√(n/(n − 1))`` (the sample sd of 0/1 values is ``√(p(1 − p)·n/(n − 1))``)."""
    d, N, K, n = 3, 5, 3, 7
    data = make_test_set("uniform", n, d, N, K, None, 4)
    W = random_W(np.random.default_rng(4), d, K, 1.5)
    got = E.class_metrics(W, *E.class_arrays(data, K), "cross_entropy", 0.0)
    x, Y, target_class, y_target = E.class_arrays(data, K)
    _, ell = forward(W, x, Y)
    per_prompt = {
        "logit_error": [sum((ell[i, k] - y_target[i, k]) ** 2 for k in range(K)) for i in range(n)],
        "test_loss": [math.log(sum(math.exp(v) for v in ell[i])) - ell[i, target_class[i]] for i in range(n)],
    }
    for name, values in per_prompt.items():
        mean = sum(values) / n
        assert got[name] == pytest.approx(mean, rel=1e-12)
        assert got[f"{name}_se"] == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n))
    p = sum(int(np.argmax(ell[i]) == target_class[i]) for i in range(n)) / n
    assert 0 < p < 1  # a test of the formula, not of a zero
    assert got["accuracy_se"] == pytest.approx(math.sqrt(p * (1 - p) / n) * math.sqrt(n / (n - 1)), rel=1e-12)
    one = E.class_metrics(W, *E.class_arrays({k: v[:1] for k, v in data.items()}, K), "square", 0.0)
    assert math.isnan(one["accuracy_se"])  # one prompt: no spread to measure


def test_evaluate_run_has_a_row_per_step_and_test_set_with_the_diagnostics():
    rng = np.random.default_rng(2)
    d, N, K = 4, 6, 3
    sets = {
        name: make_test_set(name, 40, d, N, K, 0.1 if name == "separated" else None, 2)
        for name in ("uniform", "separated")
    }
    weights = np.stack([random_W(rng, d, K) for _ in range(3)])
    table = E.evaluate_run(np.array([0, 4, 9]), weights, sets, K, "mixture", 0.5)
    assert table[["step", "test_set"]].values.tolist() == [[s, n] for s in (0, 4, 9) for n in ("uniform", "separated")]
    row = table.iloc[3]  # step 4, separated
    want = literal_metrics(weights[1], sets["separated"], K, "mixture", 0.5)
    assert row[list(want)].to_dict() == pytest.approx(want, rel=1e-10)
    assert {"xi1", "xi2", "dist_family"} <= set(table.columns)


@pytest.mark.parametrize("scale", [0.3, 3.0])
def test_binary_metrics_equal_the_literal_model(scale):
    rng = np.random.default_rng(3)
    d, N = 4, 10
    data = make_binary_set("uniform", 100, d, N, "gaussian", None, 3)
    W = scale * rng.standard_normal((d + 2, d + 2))
    ell = np.array([output(W, x, y[:, None])[0] for x, y in zip(data["x"], data["y"], strict=True)])
    squared = (ell - data["y"][np.arange(len(ell)), data["nn"]]) ** 2
    mse, se = squared.mean(), squared.std(ddof=1) / len(squared) ** 0.5
    got = E.binary_metrics(W, *E.binary_arrays(data))
    want = {"nn_mse": mse, "nn_mse_se": se, "test_loss": 0.5 * mse, "test_loss_se": 0.5 * se}
    assert got == pytest.approx(want, rel=1e-10)
    table = E.evaluate_binary(np.array([0, 1]), np.stack([W, W]), {"train": data}, d)
    assert table["nn_mse"].tolist() == pytest.approx([mse, mse], rel=1e-10)


def test_bad_losses_are_named():
    ell, y = np.zeros((2, 3)), np.zeros((2, 3))
    with pytest.raises(ValueError, match="loss must be one of square, cross_entropy, mixture, squentropy; got 'hinge'"):
        Loss("hinge", 0.0)(ell, np.zeros(2, int), y)
    with pytest.raises(ValueError, match="needs classes"):
        Loss("cross_entropy", 0.0)(ell, None, y)


def test_a_runs_table_has_the_mean_minibatch_loss_since_the_previous_saved_step():
    from onenn.analysis.tables import run_table

    metrics = pd.DataFrame({"step": [0, 2, 5], "test_set": "uniform", "accuracy": 0.5})
    table = run_table(metrics, {"experiment": "e", "variant": "v", "seed": 0}, np.arange(1.0, 6.0), np.array([0, 2, 5]))
    assert table["minibatch_loss"].tolist() == [1.0, 1.5, 4.0]  # steps [0, 1), [0, 2), [2, 5) of losses 1 ... 5
    assert list(table.columns[:3]) == ["experiment", "variant", "seed"]
