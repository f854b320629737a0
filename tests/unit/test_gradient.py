"""The reference's analytic gradient (onenn.maths.model.weight_gradient with each loss's ∂loss/∂ℓ of
onenn.maths.losses) against torch autograd of the losses written out here, and against central differences."""

import numpy as np
import pytest
import torch

from onenn.maths.losses import Loss
from onenn.maths.model import forward, simplex_code, weight_gradient
from onenn.maths.prompts import nearest_neighbour
from tests.helpers import LOSS_CASES, random_prompts
from tests.reference import central_differences

LOSSES = [Loss(case["loss"], case["c"]) for case in LOSS_CASES]


def batch_loss(W, x, classes, K, loss_fn):
    codes = simplex_code(K)
    target = classes[np.arange(len(classes)), nearest_neighbour(x)]
    q, ell = forward(W, x, codes[classes])
    loss, g = loss_fn(ell, target, codes[target])
    return loss.mean(), q, ell, g


def autograd_loss(W, x, classes, K, loss_fn):
    """The minibatch loss in torch from its definitions (docs/method.md §1-§2), the whole attention matrix formed."""
    codes = torch.from_numpy(simplex_code(K))
    x, classes = torch.from_numpy(x), torch.from_numpy(classes)
    H = torch.cat([x, torch.cat([codes[classes], torch.zeros(len(x), 1, K, dtype=x.dtype)], 1)], -1)
    H = torch.cat([H, torch.zeros(*H.shape[:2], 1, dtype=x.dtype)], -1)
    H[:, -1, -1] = 1.0
    H = H.transpose(1, 2)  # tokens as columns: (B, D, N+1)
    ell = (H @ torch.softmax(H.transpose(1, 2) @ W @ H, dim=1))[:, x.shape[-1] : -1, -1]  # (B, K)
    target = classes[torch.arange(len(x)), torch.from_numpy(nearest_neighbour(x.numpy()))]
    square = 0.5 * ((ell - codes[target]) ** 2).sum(-1)
    ce = torch.nn.functional.cross_entropy(ell, target, reduction="none")
    off = (ell**2).sum(-1) - ell.gather(1, target[:, None])[:, 0] ** 2
    value = {"square": square, "cross_entropy": ce, "mixture": (1 - loss_fn.c) * square + loss_fn.c * ce}
    value["squentropy"] = ce + off / (K - 1)
    return value[loss_fn.name].mean()


@pytest.mark.parametrize("loss_fn", LOSSES, ids=lambda l: l.name)
@pytest.mark.parametrize("N,d,K", [(16, 8, 3), (5, 3, 5)])
def test_gradient_matches_autograd_and_central_differences(rng, loss_fn, N, d, K):
    """On a random W (not the family), float64."""
    x, classes = random_prompts(rng, 32, N, d, K)
    D = d + K + 1
    W = 0.5 * rng.standard_normal((D, D))
    loss, q, ell, g = batch_loss(W, x, classes, K, loss_fn)
    analytic = weight_gradient(x, simplex_code(K)[classes], q, ell, g)
    W_t = torch.from_numpy(W).requires_grad_()
    value = autograd_loss(W_t, x, classes, K, loss_fn)
    value.backward()
    assert value.item() == pytest.approx(float(loss), rel=1e-12)
    np.testing.assert_allclose(analytic, W_t.grad.numpy(), rtol=1e-10, atol=1e-13)
    numeric = central_differences(lambda V: batch_loss(V, x, classes, K, loss_fn)[0], W, h=1e-5)
    assert np.linalg.norm(analytic - numeric) / np.linalg.norm(numeric) <= 1e-8


@pytest.mark.parametrize("loss_fn", LOSSES, ids=lambda l: l.name)
def test_label_columns_get_exactly_zero_gradient(rng, loss_fn):
    d, N, K = 6, 9, 4
    x, classes = random_prompts(rng, 20, N, d, K)
    W = rng.standard_normal((d + K + 1, d + K + 1))
    _, q, ell, g = batch_loss(W, x, classes, K, loss_fn)
    grad = weight_gradient(x, simplex_code(K)[classes], q, ell, g)
    assert np.count_nonzero(grad[:, d : d + K]) == 0
    W2 = W.copy()  # and the loss really does not move when they change
    W2[:, d : d + K] += rng.standard_normal((d + K + 1, K))
    moved, still = float(batch_loss(W2, x, classes, K, loss_fn)[0]), float(batch_loss(W, x, classes, K, loss_fn)[0])
    assert moved == pytest.approx(still, abs=1e-14)


def test_loss_rejects_unknown_name_and_bad_weight():
    with pytest.raises(ValueError, match="loss must be one of"):
        Loss("hinge")
    with pytest.raises(ValueError, match=r"c \(the mixture weight\)"):
        Loss("mixture", 1.5)
