"""The binary setting (docs/method.md §3): model, gradient, the reduced loss on the family, full-matrix GD, SGD."""

import itertools
import json
import math

import numpy as np
import pytest

from onenn.maths.family import diagnostics, family_matrix
from onenn.maths.init import initial_weights
from onenn.maths.losses import Loss
from onenn.maths.model import forward, weight_gradient
from onenn.maths.prompts import draw_labels, make_binary_set, nearest_neighbour
from onenn.maths.steps import log_spaced_steps
from onenn.maths.stream import permutation, stream_key
from onenn.theory.reduced.dynamics import gradient_descent
from onenn.theory.reduced.loss import monte_carlo_estimate, reduced_loss
from onenn.training import binary as B
from onenn.training.cpu import Engine, FixedSet
from tests.reference import central_differences, embed_active, full_loss_grad, output


def prompts(rng: np.random.Generator, n: int, N: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.standard_normal((n, N + 1, d))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return x, rng.standard_normal((n, N, 1))


def binary_loss(W: np.ndarray, x: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, ...]:
    target = Y[np.arange(len(x)), nearest_neighbour(x)]  # (B, 1)
    q, ell = forward(W, x, Y)
    return 0.5 * ((ell - target) ** 2).mean(), q, ell, ell - target


def design_labels(N: int) -> np.ndarray:
    """The 2N label vectors ±sqrt(N) e_j: their mean second moment is I_N and every odd moment is 0, so an average
    over them equals the expectation over any independent, symmetric, unit-variance labels of any polynomial of
    degree <= 3 in the labels (the loss is degree 2, its gradient degree 3 at most)."""
    E = math.sqrt(N) * np.eye(N)
    return np.concatenate([E, -E])  # (2N, N)


def design_average(W: np.ndarray, x: np.ndarray) -> tuple[float, np.ndarray]:
    """Loss and weight gradient of the binary model averaged over the label design, via model/gradient."""
    n, n_tokens, _ = x.shape
    N = n_tokens - 1
    x_rep = np.repeat(x, 2 * N, axis=0)
    Y = np.tile(design_labels(N), (n, 1))[:, :, None]
    loss, q, ell, g = binary_loss(W, x_rep, Y)
    return float(loss), weight_gradient(x_rep, Y, q, ell, g)


@pytest.mark.parametrize("N,d", [(1, 2), (16, 8), (7, 4)])
def test_binary_output_equals_full_attention(rng, N, d):
    x, Y = prompts(rng, 5, N, d)
    W = rng.standard_normal((d + 2, d + 2))
    _, ell = forward(W, x, Y)
    assert ell.shape == (5, 1)
    for b in range(5):
        np.testing.assert_allclose(ell[b], output(W, x[b], Y[b]), rtol=1e-12)


@pytest.mark.parametrize("N,d", [(16, 8), (5, 3)])
def test_binary_gradient_matches_central_differences(rng, N, d):
    x, Y = prompts(rng, 32, N, d)
    D = d + 2
    W = 0.5 * rng.standard_normal((D, D))
    _, q, ell, g = binary_loss(W, x, Y)
    analytic = weight_gradient(x, Y, q, ell, g)
    numeric = central_differences(lambda V: binary_loss(V, x, Y)[0], W, h=1e-5)
    assert np.linalg.norm(analytic - numeric) / np.linalg.norm(numeric) <= 1e-8
    assert np.count_nonzero(analytic[:, d]) == 0  # the label column


@pytest.mark.parametrize("xi", [(0.0, 3.0), (2.0, 5.0), (9.0, 6.0)])
def test_binary_loss_on_family_equals_reduced_loss(rng, xi):
    """On W = diag(xi1 I, 0, -xi2) the label-averaged binary loss of actual prompts equals the reduced loss of
    their inner products alone (exact with the label design; within Monte-Carlo error with N(0, 1) labels)."""
    N, d = 12, 5
    x, _ = prompts(rng, 300, N, d)
    t = np.einsum("bjd,bd->bj", x[:, :-1], x[:, -1])
    W = family_matrix(*xi, d, 1)
    loss, _ = design_average(W, x)
    assert loss == pytest.approx(reduced_loss(*xi, t), rel=1e-12)
    # N(0, 1) labels, 40 draws per prompt
    Y = rng.standard_normal((40 * 300, N, 1))
    x_rep = np.tile(x, (40, 1, 1))
    target = Y[np.arange(len(x_rep)), nearest_neighbour(x_rep)]
    per = 0.5 * ((forward(W, x_rep, Y)[1] - target) ** 2)[:, 0]
    se = float(per.std(ddof=1)) / math.sqrt(len(per))
    assert abs(float(per.mean()) - reduced_loss(*xi, t)) < 4 * se


def test_full_loss_grad_equals_label_design_average_of_the_model(rng):
    """full_loss_grad (labels integrated in closed form) against model.forward + weight_gradient averaged over
    the label design, at a matrix off the family with zero label row: equal to rounding, and the label row's
    label-averaged gradient is exactly what keeps it 0."""
    N, d = 6, 4
    x, _ = prompts(rng, 40, N, d)
    A = 0.7 * rng.standard_normal((d + 1, d + 1))
    W = embed_active(A, d)
    loss, grad = full_loss_grad(A, x)
    loss_ref, grad_ref = design_average(W, x)
    assert loss == pytest.approx(loss_ref, rel=1e-12)
    keep = np.r_[np.arange(d), d + 1]
    np.testing.assert_allclose(grad, grad_ref[np.ix_(keep, keep)], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(grad_ref[d], 0.0, atol=1e-14)  # label row
    np.testing.assert_allclose(grad_ref[:, d], 0.0, atol=0)  # label column


def test_full_loss_grad_matches_central_differences(rng):
    N, d = 9, 5
    x = prompts(rng, 50, N, d)[0]
    A = 0.5 * rng.standard_normal((d + 1, d + 1))
    _, grad = full_loss_grad(A, x)
    numeric = central_differences(lambda V: full_loss_grad(V, x)[0], A, h=1e-6)
    assert np.linalg.norm(grad - numeric) / np.linalg.norm(numeric) <= 1e-7


def test_full_gradient_on_family_projects_to_the_reduced_gradient(rng):
    """On the family: tr(dL/dW11) = dL/dxi1 and dL/dW33 = -dL/dxi2 (what makes the update of docs/method.md §4.3 exact)."""
    N, d = 10, 6
    x = prompts(rng, 200, N, d)[0]
    t = np.einsum("bjd,bd->bj", x[:, :-1], x[:, -1])
    A = np.diag(np.r_[np.full(d, 2.5), -4.0])
    loss, grad = full_loss_grad(A, x)
    loss_r, g1, g2 = monte_carlo_estimate(2.5, 4.0, t)[:3]
    assert loss == pytest.approx(loss_r, rel=1e-12)
    assert np.trace(grad[:d, :d]) == pytest.approx(g1, rel=1e-10)
    assert grad[d, d] == pytest.approx(-g2, rel=1e-10)


def symmetrised_prompts(rng: np.random.Generator, n: int, N: int, d: int) -> np.ndarray:
    """Prompts closed under the signed cyclic permutations of the coordinates (applied to all tokens at once):
    averaging over this group makes the W11 gradient a multiple of I and the W13, W31 gradients 0, wherever
    the scores depend on inner products only (on the family)."""
    x = rng.standard_normal((n, N + 1, d))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    copies = []
    for signs in itertools.product([1.0, -1.0], repeat=d):
        for shift in range(d):
            copies.append(np.roll(x * np.array(signs), shift, axis=-1))
    return np.concatenate(copies)


def test_full_matrix_gd_stays_on_the_family_and_equals_reduced_gd(rng):
    """Lemma 1, exactly: on a symmetrised sample full-matrix GD never leaves the family, and its (xi1, xi2) are
    the reduced GD's with the update of docs/method.md §4.3 (xi1 step divided by d)."""
    d, N, sigma, lr = 3, 4, 1.0, 0.5
    x = symmetrised_prompts(rng, 40, N, d)
    t = np.einsum("bjd,bd->bj", x[:, :-1], x[:, -1])
    reduced = gradient_descent(0.0, sigma, lr, 30, t, d, record_steps=np.arange(31))
    A_ = np.zeros((d + 1, d + 1))
    A_[-1, -1] = -sigma
    for step in range(31):
        diag = diagnostics(embed_active(A_, d), d, 1)
        assert diag["dist_family"] < 1e-12
        assert diag["xi1"] == pytest.approx(reduced.xi1[step], abs=1e-12)
        assert diag["xi2"] == pytest.approx(reduced.xi2[step], abs=1e-12)
        A_ -= lr * full_loss_grad(A_, x)[1]
    assert reduced.xi1[-1] > 0.05  # it moved


# prompt sets ---------------------------------------------------------------------------------------------


def test_separated_binary_set_has_the_margin():
    data = make_binary_set("separated", 400, 5, 12, "gaussian", 0.1, seed=3)
    x, nn = data["x"], data["nn"]
    rows = np.arange(len(nn))
    np.testing.assert_array_equal(x[:, -1], x[rows, nn])
    sq = ((x[:, :-1] - x[:, -1:]) ** 2).sum(-1)
    sq[rows, nn] = np.inf
    assert sq.min() >= 0.1
    inner = np.einsum("bjd,bd->bj", x[:, :-1], x[:, -1])
    np.testing.assert_array_equal(inner.argmax(1), nn)


def test_binary_sets_are_reproducible_and_distinct():
    a = make_binary_set("train", 50, 4, 8, "rademacher", None, seed=1)
    b = make_binary_set("train", 50, 4, 8, "rademacher", None, seed=1)
    c = make_binary_set("uniform", 50, 4, 8, "rademacher", None, seed=1)
    np.testing.assert_array_equal(a["x"], b["x"])
    assert not np.allclose(a["x"], c["x"])
    assert set(np.unique(a["y"])) == {-1.0, 1.0}


# training ------------------------------------------------------------------------------------------------


def test_train_binary_runs_epochs_over_the_fixed_set_and_first_step_by_hand():
    s = B.BinarySettings(d=3, N=5, epochs=2, train_size=300, batch=128, n_eval=4, dtype="float64", seed=4)
    train = make_binary_set("train", 300, 3, 5, "gaussian", None, seed=0)
    result = B.train_binary(s, train)
    assert s.steps == 2 * 3 and len(result["minibatch_loss"]) == 6
    assert result["saved_steps"][0] == 0 and result["saved_steps"][-1] == 6 and 1 in result["saved_steps"]
    # step 1 by hand: the epoch's permutation (the run's minibatch-order generator), its first 128 prompts, W1 = W0 - lr * gradient
    W0 = result["W"][0]
    perm = permutation(stream_key(4, "minibatch_order"), 300, 0)[:128]
    x, Y = train["x"][perm], train["y"][perm][:, :, None]
    loss, q, ell, g = binary_loss(W0, x, Y)
    W1 = W0 - s.lr * weight_gradient(x, Y, q, ell, g)
    np.testing.assert_allclose(result["W"][1], W1, rtol=1e-12, atol=1e-14)
    assert result["minibatch_loss"][0] == pytest.approx(float(loss), rel=1e-12)
    # random Gaussian init (sigma 0, epsilon 1): the label column never moves
    np.testing.assert_array_equal(result["W"][-1][:, 3], result["W"][0][:, 3])


def train_binary_reference(s: B.BinarySettings, train_set: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The binary experiment's SGD with the reference model and gradient, one minibatch at a time, in the run's
    precision: the same start, permutations and minibatches as ``train_binary``."""
    x, y = train_set["x"].astype(s.dtype), train_set["y"].astype(s.dtype)[:, :, None]
    target = y[np.arange(len(y)), train_set["nn"]]
    W = initial_weights(s.d, 1, s.sigma, s.epsilon, "all", s.seed, dtype=s.dtype)
    Ws, losses = [W], []
    for epoch in range(s.epochs):
        perm = permutation(stream_key(s.seed, "minibatch_order"), s.train_size, epoch)
        for lo in range(0, s.train_size, s.batch):
            rows = perm[lo : lo + s.batch]
            q, ell = forward(W, x[rows], y[rows])
            residual = ell - target[rows]  # ∂loss/∂ℓ of ½(ℓ − y_{i*})²
            losses.append(0.5 * (residual**2).mean())
            W = (W - s.lr * weight_gradient(x[rows], y[rows], q, ell, residual)).astype(s.dtype)
            Ws.append(W)
    saved_steps = log_spaced_steps(s.steps, s.n_eval, refine=True)
    return {"saved_steps": saved_steps, "W": np.stack([Ws[t] for t in saved_steps]), "minibatch_loss": losses}


@pytest.mark.parametrize("dtype,atol,rtol", [("float64", 1e-12, 1e-12), ("float32", 2e-6, 2e-5)])
@pytest.mark.parametrize(
    "changes",
    [
        {"train_size": 300, "batch": 128},  # 2 full minibatches and a remainder of 44 an epoch
        {"train_size": 256, "batch": 64},  # no remainder
        {"train_size": 100, "batch": 128},  # the remainder alone
        {"train_size": 300, "batch": 128, "sigma": 3.0, "epsilon": 0.3, "labels": "rademacher"},
    ],
)
def test_train_binary_matches_the_reference_loop(changes, dtype, atol, rtol):
    """The CPU engine (label width 1, FixedSet source) against the reference loop: same saved steps, weights and
    minibatch losses, float64 to rounding, float32 to round-off."""
    s = B.BinarySettings(d=3, N=5, epochs=5, n_eval=9, seed=4, dtype=dtype, **changes)
    train = make_binary_set("train", s.train_size, 3, 5, s.labels, None, seed=0)
    engine, reference = B.train_binary(s, train), train_binary_reference(s, train)
    np.testing.assert_array_equal(engine["saved_steps"], reference["saved_steps"])
    if s.train_size % s.batch:  # some saved W is the one before a remainder minibatch
        assert any(t % s.steps_per_epoch == s.steps_per_epoch - 1 for t in engine["saved_steps"])
    assert np.abs(engine["W"][-1] - engine["W"][0]).max() > 1e-2  # the weights did move
    np.testing.assert_allclose(engine["W"], reference["W"], rtol=0, atol=atol)
    assert len(engine["minibatch_loss"]) == s.steps
    np.testing.assert_allclose(engine["minibatch_loss"], reference["minibatch_loss"], rtol=rtol)


def test_fixed_set_source_refuses_what_it_cannot_feed():
    H_set, U_set = np.zeros((10, 5, 3)), np.zeros((10, 1))
    source = FixedSet(H_set, U_set, stream_key(0, "minibatch_order"))
    with pytest.raises(ValueError, match="loss must be 'square'"):
        Engine(np.zeros((5, 5)), d=3, N=2, m=1, batch=4, lr=0.1, loss=Loss("cross_entropy"), source=source)
    with pytest.raises(ValueError, match=r"do not fit the engine's \(n, D, N\+1\) = \(n, 5, 4\)"):
        Engine(np.zeros((5, 5)), d=3, N=3, m=1, batch=4, lr=0.1, loss=Loss(), source=source)
    engine = Engine(np.zeros((5, 5)), d=3, N=2, m=1, batch=4, lr=0.1, loss=Loss(), source=source)
    engine.run(2)
    with pytest.raises(ValueError, match=r"would cross the end of a pass \(2 left\)"):
        engine.run(1)


def test_bad_binary_arguments():
    with pytest.raises(ValueError, match="labels must be one of"):
        draw_labels(np.random.default_rng(0), (2, 2), "uniform")
    with pytest.raises(ValueError, match="test_set must be one of"):
        make_binary_set("test", 5, 3, 2, "gaussian", None, 0)
    with pytest.raises(ValueError, match="unknown binary training settings"):
        B.BinarySettings.from_dict({"K": 3})
    s = B.BinarySettings(d=3, N=5, epochs=1, train_size=10)
    with pytest.raises(ValueError, match="training set has prompts of shape"):
        B.train_binary(s, make_binary_set("train", 12, 3, 5, "gaussian", None, 0))


def test_two_binary_training_jobs_of_the_same_settings_write_the_same_bytes(tmp_path):
    """The run record holds settings and software, no wall-clock time (it goes to the job's log): the same
    settings give the same record and weights, byte for byte, so the tables made from them are equal too."""
    import logging

    from onenn.base.io import save_arrays
    from onenn.jobs.train import binary_train_job

    s = B.BinarySettings(d=3, N=4, epochs=1, batch=8, train_size=16, n_eval=2)
    save_arrays(tmp_path / "train.npz", **make_binary_set("train", 16, s.d, s.N, s.labels, None, 0))
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        binary_train_job(s.to_dict(), identity={"experiment": "e", "variant": "v", "seed": "0"},
                         train_path=str(tmp_path / "train.npz"), weights_path=str(tmp_path / run / "weights.npz"),
                         run_path=str(tmp_path / run / "run.json"), threads=1, log=logging.getLogger("test"))  # fmt: skip
    for name in ("run.json", "weights.npz"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert not {"seconds", "ms_per_step"} & set(json.loads((tmp_path / "a/run.json").read_text()))
