"""The CPU engine (onenn.training.cpu, its compiled loops onenn.training.cpu_steps) against the reference
(onenn.maths.model, onenn.maths.losses): SGD written with the reference, one minibatch at a time, on the same draws."""

import math
from dataclasses import replace

import numpy as np
import pytest
from numba import njit

from onenn.maths.init import initial_weights
from onenn.maths.losses import Loss
from onenn.maths.model import forward, simplex_code, weight_gradient
from onenn.maths.prompts import nearest_neighbour
from onenn.maths.stream import minibatch as stream_minibatch
from onenn.maths.stream import stream_key
from onenn.training import cpu_stream
from onenn.training.cpu import Engine, FreshDraws
from onenn.training.cpu_steps import exp_nonpositive
from onenn.training.train import TrainSettings, make_engine, train
from tests.helpers import LOSS_CASES, loss_id

F64 = TrainSettings(steps=300, n_eval=6, device="cpu", dtype="float64")


def reference_run(s: TrainSettings) -> tuple[list[np.ndarray], list[float]]:
    """SGD with the reference forward pass, loss and gradient, on the engine's draws (held to the stream's reference
    by tests/unit/test_stream.py): W0..W_steps and the minibatch losses."""
    W = initial_weights(s.d, s.K, s.sigma, s.epsilon, s.noise_blocks, s.seed)
    key, codes, loss_fn = stream_key(s.seed, "minibatches"), simplex_code(s.K), Loss(s.loss, s.c)
    Ws, losses = [W], []
    for step in range(s.steps):
        Z, C = np.empty((1, s.d, s.N + 1, s.batch), np.float32), np.empty((1, s.N, s.batch), np.int64)
        cpu_stream.draw_block(Z, C, key, step, 1, s.K, s.d)
        z = Z[0].astype(np.float64).transpose(2, 1, 0)  # (B, N+1, d)
        x, classes = z / np.sqrt((z * z).sum(-1, keepdims=True)), C[0].T
        target_class = classes[np.arange(s.batch), nearest_neighbour(x)]
        q, ell = forward(W, x, codes[classes])
        loss, g = loss_fn(ell, target_class, codes[target_class])
        W = W - s.lr * weight_gradient(x, codes[classes], q, ell, g)
        Ws.append(W)
        losses.append(loss.mean())
    return Ws, losses


@pytest.mark.parametrize(
    "changes", [*LOSS_CASES, {"N": 5, "K": 10, "batch": 7, "epsilon": 0.5}, {"N": 1, "K": 2, "d": 3}], ids=loss_id
)
def test_engine_matches_the_reference(changes):
    """float64: the weights at every saved step and every minibatch loss, to rounding."""
    s = replace(F64, steps=60, n_eval=4, **{"epsilon": 0.3, **changes})
    run, (Ws, losses) = train(s), reference_run(s)
    assert np.abs(run["W"][-1] - run["W"][0]).max() > 1e-3  # the weights did move
    np.testing.assert_allclose(run["W"], np.stack([Ws[t] for t in run["saved_steps"]]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(run["minibatch_loss"], losses, rtol=1e-12)


def test_the_minibatches_are_the_streams_reference_draws():
    """Step t's minibatch as the engine prepares it: the inputs z / ‖z‖ and the classes of the reference's draws."""
    s = replace(F64, batch=32, N=8)
    key = stream_key(s.seed, "minibatches")
    engine = make_engine(s)
    for block in range(2):
        engine.prepare_block(engine.S)
        for i in (0, 5, engine.S - 1):
            z, classes = stream_minibatch(key, block * engine.S + i, s.d, s.N, s.K, s.batch)
            x = z.astype(np.float64) / np.linalg.norm(z.astype(np.float64), axis=0)
            np.testing.assert_allclose(engine.H[i, : s.d], x, rtol=0, atol=1e-6)
            codes = np.eye(s.K)[classes].transpose(2, 0, 1) - 1 / s.K  # (K, N, B)
            np.testing.assert_array_equal(engine.H[i, s.d : s.d + s.K, : s.N], codes)
            inner = np.einsum("djb,db->jb", engine.H[i, : s.d, :-1], engine.H[i, : s.d, -1])
            np.testing.assert_array_equal(engine.target_class[i], classes[inner.argmax(0), np.arange(s.batch)])


def test_float32_engine_follows_the_float64_run():
    """Both precisions see the same minibatches (float32 draws)."""
    s = replace(F64, steps=100)
    np.testing.assert_allclose(train(replace(s, dtype="float32"))["W"], train(s)["W"], rtol=0, atol=2e-5)


def engine_of(s: TrainSettings, W: np.ndarray, **options) -> Engine:
    source = FreshDraws(stream_key(s.seed, "minibatches"), options.pop("first_step", 0))
    return Engine(W, d=s.d, N=s.N, m=s.K, batch=s.batch, lr=s.lr, loss=Loss(), source=source, **options)


@pytest.mark.parametrize("block", [1, 7, 64])
def test_results_do_not_depend_on_the_block_size(block):
    s = replace(F64, steps=50, N=8)
    default, other = make_engine(s), engine_of(s, make_engine(s).W, block=block)
    for a, b in zip(default.run(50, [0, 13, 50]), other.run(50, [0, 13, 50]), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_longer_run_starts_with_the_shorter_one():
    """W after 30 steps is the same in a 30- and a 47-step run, and a run continued from step 30 by a new engine
    whose stream starts at step 30 ends where the 47-step run ends."""
    s = replace(F64, dtype="float32")
    short, _ = make_engine(s).run(30, [30])
    long, _ = make_engine(s).run(47, [30, 47])
    np.testing.assert_array_equal(short[0], long[0])
    end, _ = engine_of(s, short[0].copy(), first_step=30).run(17, [17])
    np.testing.assert_array_equal(end[0], long[1])


def test_saved_steps_and_shapes_are_checked():
    engine = make_engine(F64)
    with pytest.raises(ValueError, match="saved_steps must be sorted and lie in 0..5"):
        engine.run(5, [0, 6])
    with pytest.raises(ValueError, match=r"W must be \(D, D\) = \(12, 12\)"):
        Engine(np.zeros((3, 3)), d=8, N=4, m=3, batch=2, lr=0.1, loss=Loss(), source=FreshDraws(0))
    with pytest.raises(TypeError, match="the CPU engine trains a numpy array W"):
        Engine([[0.0]], d=8, N=4, m=3, batch=2, lr=0.1, loss=Loss(), source=FreshDraws(0))


def test_steps_outside_the_engines_block_are_refused_before_any_kernel_runs():
    """The compiled loops do not check their ranges (past the block they would read past their buffers)."""
    engine = make_engine(TrainSettings(steps=4, n_eval=2, device="cpu"))
    with pytest.raises(ValueError, match=rf"prepare_block: n must lie in 1..{engine.S} \(the engine's block\)"):
        engine.prepare_block(engine.S + 1)
    engine.prepare_block(16)
    W = engine.W.copy()
    for first, last in ((0, engine.S + 1), (-1, 4), (5, 4)):
        with pytest.raises(ValueError, match=f"got first={first}, last={last}"):
            engine.sgd_steps(first, last)
    np.testing.assert_array_equal(engine.W, W)  # nothing ran
    engine.sgd_steps(0, 16)
    assert not np.array_equal(engine.W, W)


def test_a_cuda_device_is_refused_by_the_cpu_engine():
    with pytest.raises(ValueError, match="the engine 'cpu' trains on the CPU; the settings ask for device: cuda"):
        make_engine(replace(F64, device="cuda"), "cpu")


@njit
def _exp_all(x, out):
    for i in range(x.size):
        out[i] = exp_nonpositive(x[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_of_the_softmax(dtype):
    """exp on x ≤ 0 against numpy's float64 exp: float32 within 2 ulp down to the smallest normal number (below it,
    within 2^-125 of 0); float64 (the library's exp) within 1 ulp."""
    rng = np.random.default_rng(0)
    x = np.concatenate([[0.0, -1e-30, -math.log(2), -87.0, -87.5, -88.7, -104.0, -1e30, -np.inf]])
    x = np.concatenate([x, -rng.exponential(3.0, 100_000), -rng.uniform(0, 87.4, 100_000)]).astype(dtype)
    out = np.empty_like(x)
    _exp_all(x, out)
    exact = np.exp(x.astype(np.float64))
    if dtype == np.float64:
        np.testing.assert_array_max_ulp(out, exact, maxulp=1)
        return
    assert out[0] == 1.0
    nan = np.array([np.nan, np.inf], dtype)  # a diverged run's scores: not finite, and no read outside the table
    _exp_all(nan, nan)
    assert not np.isfinite(nan).any()
    normal = exact >= np.finfo(np.float32).tiny
    ulp = np.spacing(exact[normal].astype(np.float32)).astype(np.float64)
    assert (np.abs(out[normal] - exact[normal]) <= 2 * ulp).all()
    assert (out[~normal] >= 0).all() and out[~normal].max() <= 2.0**-125
