import numpy as np
import pytest
import torch

from onenn.maths.gradient import weight_gradient
from onenn.maths.losses import Loss
from onenn.maths.model import forward, label_vectors, simplex_code
from onenn.maths.prompts import nearest_neighbour
from tests.helpers import LOSS_CASES, random_prompts
from tests.reference import central_differences

LOSSES = [Loss(case["loss"], case["c"]) for case in LOSS_CASES]


def batch_loss(W, x, classes, K, loss_fn):
    codes = simplex_code(K)
    target = classes[torch.arange(len(classes)), nearest_neighbour(x)]
    q, ell = forward(W, x, codes[classes])
    loss, g = loss_fn(ell, target, codes[target])
    return loss.mean(), q, ell, g


@pytest.mark.parametrize("loss_fn", LOSSES, ids=lambda l: l.name)
@pytest.mark.parametrize("N,d,K", [(16, 8, 3), (5, 3, 5)])
def test_gradient_matches_central_differences(rng, loss_fn, N, d, K):
    """The analytic gradient on a random W (not the family) against central differences, float64."""
    x, classes = random_prompts(rng, 32, N, d, K)
    D = d + K + 1
    W = torch.from_numpy(0.5 * rng.standard_normal((D, D)))
    _, q, ell, g = batch_loss(W, x, classes, K, loss_fn)
    analytic = weight_gradient(x, label_vectors(classes, K), q, ell, g).numpy()
    numeric = central_differences(lambda V: batch_loss(V, x, classes, K, loss_fn)[0], W, h=1e-5)
    rel = np.linalg.norm(analytic - numeric) / np.linalg.norm(numeric)
    assert rel <= 1e-8


@pytest.mark.parametrize("loss_fn", LOSSES, ids=lambda l: l.name)
def test_label_columns_get_exactly_zero_gradient(rng, loss_fn):
    d, N, K = 6, 9, 4
    x, classes = random_prompts(rng, 20, N, d, K)
    W = torch.from_numpy(rng.standard_normal((d + K + 1, d + K + 1)))
    _, q, ell, g = batch_loss(W, x, classes, K, loss_fn)
    grad = weight_gradient(x, label_vectors(classes, K), q, ell, g)
    assert torch.count_nonzero(grad[:, d : d + K]) == 0
    # and the loss really does not move when they change
    W2 = W.clone()
    W2[:, d : d + K] += torch.from_numpy(rng.standard_normal((d + K + 1, K)))
    # compare numbers: pytest.approx does not take 0-d tensors (pytest >= 9.2 iterates over them)
    moved, still = float(batch_loss(W2, x, classes, K, loss_fn)[0]), float(batch_loss(W, x, classes, K, loss_fn)[0])
    assert moved == pytest.approx(still, abs=1e-14)


def test_loss_rejects_unknown_name_and_bad_weight():
    with pytest.raises(ValueError, match="loss must be one of"):
        Loss("hinge")
    with pytest.raises(ValueError, match=r"c \(the mixture weight\)"):
        Loss("mixture", 1.5)
