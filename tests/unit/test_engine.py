"""The training engine against the readable reference (onenn.maths.model + onenn.maths.gradient) and against autograd."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from onenn.maths.gradient import weight_gradient
from onenn.maths.init import initial_weights
from onenn.maths.losses import Loss
from onenn.maths.model import forward, simplex_code
from onenn.maths.prompts import nearest_neighbour
from onenn.maths.stream import minibatch as stream_minibatch
from onenn.maths.stream import stream_key
from onenn.training.baseline import train_baseline
from onenn.training.engine import Engine
from onenn.training.run_setup import TrainSettings, make_engine, sample_batch
from onenn.training.sources import FreshDraws
from onenn.training.train import train
from tests.helpers import LOSS_CASES, loss_id

F64 = TrainSettings(steps=300, n_eval=6, device="cpu", dtype="float64")


def reference_run(s: TrainSettings) -> np.ndarray:
    """SGD with the reference forward pass and analytic gradient, one minibatch at a time: final W."""
    W = initial_weights(s.d, s.K, s.sigma, s.epsilon, s.noise_blocks, s.seed)
    key = stream_key(s.seed, "minibatches")
    codes, loss_fn = simplex_code(s.K), Loss(s.loss, s.c)
    for step in range(s.steps):
        x, classes = sample_batch(s.batch, s.N, s.d, s.K, key, step, dtype=torch.float64, device=torch.device("cpu"))
        Y = codes[classes]
        target_class = classes.gather(1, nearest_neighbour(x)[:, None])[:, 0]
        q, ell = forward(W, x, Y)
        _, g = loss_fn(ell, target_class, codes[target_class])
        W = W - s.lr * weight_gradient(x, Y, q, ell, g)
    return W.numpy()


@pytest.mark.parametrize(
    "changes", [*LOSS_CASES, {"N": 5, "K": 10, "batch": 7, "epsilon": 0.5}, {"N": 1, "K": 2, "d": 3}], ids=loss_id
)
def test_engine_matches_the_reference_path(changes):
    s = replace(F64, steps=40, n_eval=3, **changes)
    np.testing.assert_allclose(train(s)["W"][-1], reference_run(s), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "changes", [{}, *({**case, "epsilon": 0.3, "N": 6, "K": 4} for case in LOSS_CASES)], ids=loss_id
)
def test_engine_matches_the_autograd_baseline_to_rounding(changes):
    """Same data, float64: a few hundred steps of the engine and of autograd over the full attention matrix
    (torch.optim.SGD) give the same weights and the same minibatch losses."""
    s = replace(F64, **changes)
    engine, baseline = train(s), train_baseline(s)
    assert np.abs(engine["W"][-1] - engine["W"][0]).max() > 1e-3  # the weights did move
    np.testing.assert_allclose(engine["W"], baseline["W"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(engine["minibatch_loss"], baseline["minibatch_loss"], rtol=1e-12)


def test_float32_engine_follows_the_float64_run():
    """Both precisions see the same minibatches (float32 draws)."""
    s = replace(F64, steps=100)
    np.testing.assert_allclose(train(replace(s, dtype="float32"))["W"], train(s)["W"], rtol=0, atol=2e-5)


@pytest.mark.parametrize("block", [1, 7, 64])
def test_results_do_not_depend_on_the_block_size(block):
    s = replace(F64, steps=50, N=8)
    default = make_engine(s)
    other = make_engine(s)
    source = FreshDraws(other.source.key)
    other = Engine(other.W, d=s.d, N=s.N, m=s.K, batch=s.batch, lr=s.lr, loss=Loss(), source=source, block=block)
    torch.testing.assert_close(default.run(50, [0, 13, 50]), other.run(50, [0, 13, 50]), rtol=0, atol=0)


def test_a_longer_run_starts_with_the_shorter_one():
    """The stream does not depend on the run length: W after 30 steps is the same in a 30- and a 47-step run, and
    a run continued from step 30 by a new engine whose stream starts at step 30 ends where the 47-step run ends."""
    s = replace(F64, dtype="float32")
    short, _ = make_engine(s).run(30, [30])
    long, _ = make_engine(s).run(47, [30, 47])
    assert torch.equal(short[0], long[0])
    source = FreshDraws(stream_key(s.seed, "minibatches"), first_step=30)
    resumed = Engine(short[0].clone(), d=s.d, N=s.N, m=s.K, batch=s.batch, lr=s.lr, loss=Loss(), source=source)
    end, _ = resumed.run(17, [17])
    assert torch.equal(end[0], long[1])


def test_the_minibatches_are_the_streams_reference_draws():
    """Step t's minibatch, as the engine prepares it, holds the inputs z / ‖z‖ and the classes of the numpy
    reference's draws at step t (onenn.maths.stream.minibatch), to the ulps in which the compiled normals may differ."""
    s = replace(F64, batch=32, N=8)
    key = stream_key(s.seed, "minibatches")
    engine = make_engine(s)
    for block in range(2):
        engine.prepare_block(engine.S)
        for i in (0, 5, engine.S - 1):
            z, classes = stream_minibatch(key, block * engine.S + i, s.d, s.N, s.K, s.batch)
            x = z.astype(np.float64) / np.linalg.norm(z.astype(np.float64), axis=0)
            np.testing.assert_allclose(engine.H[i, : s.d].numpy(), x, rtol=0, atol=1e-6)
            codes = np.eye(s.K)[classes].transpose(2, 0, 1) - 1 / s.K  # (K, N, B)
            np.testing.assert_array_equal(engine.H[i, s.d : s.d + s.K, : s.N].numpy(), codes)


@pytest.mark.parametrize("changes", [{"N": 64}, {"K": 10, "batch": 512}])
def test_results_do_not_depend_on_the_number_of_threads(changes):
    """Tensors large enough for torch to split operations across threads."""
    s = replace(F64, steps=40, n_eval=3, dtype="float32", **changes)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = train(s)
        torch.set_num_threads(2)
        two = train(s)
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(one["W"], two["W"])
    np.testing.assert_array_equal(one["minibatch_loss"], two["minibatch_loss"])


def test_saved_steps_are_checked():
    engine = make_engine(F64)
    with pytest.raises(ValueError, match="saved_steps must be sorted and lie in 0..5"):
        engine.run(5, [0, 6])
    with pytest.raises(ValueError, match=r"W must be \(D, D\) = \(12, 12\)"):
        Engine(torch.zeros(3, 3), d=8, N=4, m=3, batch=2, lr=0.1, loss=Loss(), source=FreshDraws(0))


@pytest.mark.parametrize("engine_name", ["compiled", "torch"])
def test_steps_outside_the_engines_block_are_refused_before_any_kernel_runs(engine_name):
    """The compiled kernels do not check their ranges: past the engine's block they would read past their
    buffers (a segmentation fault, not an error). The engine checks first, and names the arguments."""
    engine = make_engine(TrainSettings(steps=4, n_eval=2, device="cpu"), engine_name)
    with pytest.raises(ValueError, match=rf"prepare_block: n must lie in 1..{engine.S} \(the engine's block\)"):
        engine.prepare_block(engine.S + 1)
    engine.prepare_block(16)
    W = engine.W.clone()
    for first, last in ((0, engine.S + 1), (-1, 4), (5, 4)):
        with pytest.raises(ValueError, match=f"got first={first}, last={last}"):
            engine.sgd_steps(first, last)
    assert torch.equal(engine.W, W)  # nothing ran
    engine.sgd_steps(0, 16)
    assert not torch.equal(engine.W, W)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("changes", [*LOSS_CASES, {"N": 5, "K": 10, "batch": 7, "epsilon": 0.5}], ids=loss_id)
def test_the_numpy_engine_is_the_tensor_engine_bit_for_bit(changes, dtype):
    """The compiled kernels on numpy arrays (a CPU training job's engine, without torch) and on torch tensors'
    memory: the same start, minibatches, weights and losses, to the bit, with saved steps inside blocks."""
    s = replace(F64, steps=40, n_eval=5, dtype=dtype, **{"epsilon": 0.2, **changes})
    saved = [0, 3, 16, 17, 40]
    arrays, tensors = make_engine(s, numpy=True), make_engine(s, "compiled")
    assert isinstance(arrays.W, np.ndarray) and isinstance(tensors.W, torch.Tensor)
    np.testing.assert_array_equal(arrays.W, tensors.W.numpy())
    (W_arrays, loss_arrays), (W_tensors, loss_tensors) = arrays.run(s.steps, saved), tensors.run(s.steps, saved)
    assert W_arrays.dtype == np.dtype(dtype) and (W_arrays[-1] != W_arrays[0]).any()
    np.testing.assert_array_equal(W_arrays, W_tensors.numpy())
    np.testing.assert_array_equal(loss_arrays, loss_tensors.numpy())


def test_a_numpy_w_is_for_the_compiled_kernels_alone():
    W = np.zeros((12, 12), np.float32)
    with pytest.raises(ValueError, match="the torch operations \\(compiled=False\\) need W as a torch tensor"):
        Engine(W, d=8, N=4, m=3, batch=2, lr=0.1, loss=Loss(), source=FreshDraws(0), compiled=False)
    assert Engine(W, d=8, N=4, m=3, batch=2, lr=0.1, loss=Loss(), source=FreshDraws(0)).compiled
    assert type(make_engine(replace(F64, steps=2), "torch", numpy=True).W) is torch.Tensor  # torch: tensors
