"""The numpy model (onenn.maths.model_numpy) and the evaluation built on it (onenn.analysis.evaluate) against the torch
definitions of the model and the losses (onenn.maths.model, onenn.maths.losses), which the numpy model repeats so that an
evaluation job never imports torch."""

import math

import numpy as np
import pytest
import torch

from onenn.maths import model_numpy
from onenn.analysis import evaluate as E
from onenn.maths.family import family_matrix
from onenn.maths.losses import LOSSES, Loss
from onenn.maths.model import forward, label_vectors, simplex_code
from onenn.maths.prompts import make_binary_set, make_test_set

RTOL = 1e-12


def torch_metrics(W: np.ndarray, data: dict[str, np.ndarray], K: int, loss: Loss) -> dict[str, float]:
    """The metrics of docs/method.md §5 from the torch model and loss, written out here."""
    x = torch.from_numpy(data["x"]).double()
    classes = torch.from_numpy(data["classes"]).long()
    target_class = classes[torch.arange(len(classes)), torch.from_numpy(data["nn"]).long()]
    y_target = simplex_code(K)[target_class]
    _, ell = forward(torch.from_numpy(W), x, label_vectors(classes, K))
    values, _ = loss(ell, target_class, y_target)
    per_prompt = {
        "logit_error": ((ell - y_target) ** 2).sum(-1),
        "accuracy": (ell.argmax(-1) == target_class).double(),
        "test_loss": values,
    }
    n = len(values)
    means = {name: v.mean().item() for name, v in per_prompt.items()}
    return means | {f"{name}_se": (v.std(unbiased=True) / n**0.5).item() for name, v in per_prompt.items()}


def random_W(rng: np.random.Generator, d: int, K: int, scale: float = 1.0) -> np.ndarray:
    D = d + K + 1
    return family_matrix(2.0, 3.0, d, K) + scale * rng.standard_normal((D, D))


def test_the_numpy_losses_are_the_losses_of_onenn_losses():
    assert tuple(model_numpy.LOSS_VALUES) == LOSSES


@pytest.mark.parametrize("K", [2, 3, 5, 10])
@pytest.mark.parametrize("loss", LOSSES)
def test_prompt_metrics_equal_the_torch_model_and_loss(K, loss):
    rng = np.random.default_rng(K)
    d, N = 5, 12
    data = make_test_set("uniform", 300, d, N, K, None, K)
    for scale in (0.3, 3.0):  # near the family, and far from it (large logits: the softmax shift matters)
        W = random_W(rng, d, K, scale)
        want = torch_metrics(W, data, K, Loss(loss, 0.3))
        got = E.prompt_metrics(W, data["x"], data["classes"], data["nn"], K, loss, 0.3)
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == pytest.approx(want[key], rel=RTOL, abs=1e-300), (key, scale)


@pytest.mark.parametrize("loss", LOSSES)
def test_per_prompt_outputs_and_losses_equal_torch(loss):
    rng = np.random.default_rng(1)
    d, N, K = 4, 7, 4
    data = make_test_set("separated", 50, d, N, K, 0.1, 1)
    W = random_W(rng, d, K, 2.0)
    x, Y, target_class, y_target = E.class_arrays(data, K)
    q, ell = model_numpy.forward(W, x, Y)
    q_t, ell_t = forward(torch.from_numpy(W), torch.from_numpy(x), torch.from_numpy(Y))
    np.testing.assert_allclose(q, q_t.numpy(), rtol=RTOL, atol=1e-300)
    np.testing.assert_allclose(ell, ell_t.numpy(), rtol=RTOL, atol=1e-15)
    values, _ = Loss(loss, 0.7)(ell_t, torch.from_numpy(target_class), torch.from_numpy(y_target))
    np.testing.assert_allclose(
        model_numpy.loss_values(loss, 0.7, ell, target_class, y_target), values.numpy(), rtol=RTOL
    )


def test_the_standard_errors_are_the_sample_sd_over_the_prompts_over_root_n():
    """On 7 prompts, written out: ``√(Σ(v − v̄)²/(n − 1)/n)`` for the logit error and the loss; for the accuracy the
    binomial ``√(p(1 − p)/n)·√(n/(n − 1))`` (the sample sd of 0/1 values is ``√(p(1 − p)·n/(n − 1))``)."""
    d, N, K, n = 3, 5, 3, 7
    data = make_test_set("uniform", n, d, N, K, None, 4)
    W = random_W(np.random.default_rng(4), d, K, 1.5)
    got = E.prompt_metrics(W, data["x"], data["classes"], data["nn"], K, "cross_entropy")
    x, Y, target_class, y_target = E.class_arrays(data, K)
    _, ell = model_numpy.forward(W, x, Y)
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
    one = E.prompt_metrics(W, data["x"][:1], data["classes"][:1], data["nn"][:1], K, "square")
    assert math.isnan(one["accuracy_se"])  # one prompt: no spread to measure


def test_ties_at_xi1_zero_are_broken_as_torch_breaks_them():
    """On the family with ``xi1 = 0`` every context point has the same weight: the output is the plurality vote
    of the context, and classes with equal counts tie up to rounding; the accuracy must be torch's to the bit."""
    d, N, K = 8, 16, 3
    for test_set, delta in (("uniform", None), ("separated", 0.1)):
        data = make_test_set(test_set, 2048, d, N, K, delta, 5)
        W = family_matrix(0.0, 3.0, d, K)
        got = E.prompt_metrics(W, data["x"], data["classes"], data["nn"], K, "square")
        assert got["accuracy"] == torch_metrics(W, data, K, Loss())["accuracy"]


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
    want = torch_metrics(weights[1], sets["separated"], K, Loss("mixture", 0.5))
    assert row[list(want)].to_dict() == pytest.approx(want, rel=RTOL)
    assert {"xi1", "xi2", "dist_family"} <= set(table.columns)


@pytest.mark.parametrize("scale", [0.3, 3.0])
def test_binary_metrics_equal_the_torch_model(scale):
    rng = np.random.default_rng(3)
    d, N = 4, 10
    data = make_binary_set("uniform", 200, d, N, "gaussian", None, 3)
    W = scale * rng.standard_normal((d + 2, d + 2))
    x = torch.from_numpy(data["x"]).double()
    y = torch.from_numpy(data["y"]).double()
    target = y[torch.arange(len(y)), torch.from_numpy(data["nn"]).long()][:, None]
    _, ell = forward(torch.from_numpy(W), x, y[:, :, None])
    squared = ((ell - target) ** 2)[:, 0]
    mse, se = squared.mean().item(), (squared.std(unbiased=True) / len(squared) ** 0.5).item()
    got = E.binary_metrics(W, *E.binary_arrays(data))
    want = {"nn_mse": mse, "nn_mse_se": se, "test_loss": 0.5 * mse, "test_loss_se": 0.5 * se}
    assert got == pytest.approx(want, rel=RTOL)
    table = E.evaluate_binary(np.array([0, 1]), np.stack([W, W]), {"train": data}, d)
    assert table["nn_mse"].tolist() == pytest.approx([mse, mse], rel=RTOL)


def test_bad_losses_are_named():
    ell, y = np.zeros((2, 3)), np.zeros((2, 3))
    with pytest.raises(ValueError, match="loss must be one of square, cross_entropy, mixture, squentropy; got 'hinge'"):
        model_numpy.loss_values("hinge", 0.0, ell, np.zeros(2, int), y)
    with pytest.raises(ValueError, match="needs classes"):
        model_numpy.loss_values("cross_entropy", 0.0, ell, None, y)
