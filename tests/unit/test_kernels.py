"""The engine's compiled CPU kernels (onenn.training.kernels) against its torch operations, and their exp against
float64's. The engine's default on the CPU is the compiled path, so tests/unit/test_engine.py and tests/unit/test_binary.py
also hold it to the readable reference and to autograd."""

import math

import numpy as np
import pytest
import torch
from numba import njit

from onenn.maths.losses import Loss
from onenn.maths.prompts import make_binary_set
from onenn.maths.stream import stream_key
from onenn.training.binary import BinarySettings, FixedSetSGD
from onenn.training.engine import Engine
from onenn.training.kernels import exp_nonpositive
from onenn.training.sources import FreshDraws
from tests.helpers import LOSS_CASES, loss_id


def engine(compiled: bool, *, d=8, N=16, K=3, B=32, dtype=torch.float32, seed=0, loss="square", c=0.0) -> Engine:
    D = d + K + 1
    W = 0.3 * torch.randn(D, D, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    key = stream_key(seed + 1, "minibatches")
    return Engine(
        W.to(dtype), d=d, N=N, m=K, batch=B, lr=0.5, loss=Loss(loss, c), source=FreshDraws(key), compiled=compiled
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [{"B": 128}, {"K": 10, "N": 5, "B": 32}, {"K": 2, "N": 1, "d": 3}, {"B": 7}])
def test_compiled_preparation_is_torchs(dtype, shape):
    """Inputs on the sphere, label codes, 1-NN classes and targets: the same numbers when the minibatch size is a
    multiple of 32 (the paper's 128 included); otherwise the inputs to their last bits."""
    torch_path, compiled = engine(False, dtype=dtype, **shape), engine(True, dtype=dtype, **shape)
    for _ in range(2):  # two blocks: the second goes on with the stream's later steps
        torch_path.prepare_block(torch_path.S)
        compiled.prepare_block(compiled.S)
        if torch_path.B % 32 == 0:
            assert torch.equal(torch_path.H, compiled.H)
        else:
            ulp = torch.finfo(dtype).eps
            torch.testing.assert_close(compiled.H, torch_path.H, atol=2 * ulp, rtol=0)
        assert torch.equal(torch_path.U, compiled.U)
        assert torch.equal(torch_path.target_class, compiled.target_class)


@pytest.mark.parametrize(("dtype", "atol", "rtol"), [(torch.float64, 1e-13, 1e-12), (torch.float32, 2e-6, 2e-5)])
@pytest.mark.parametrize(
    "shape",
    [
        {},
        {"K": 10, "N": 5, "B": 7},
        {"K": 2, "N": 1, "d": 3},
        {"loss": "mixture", "c": 0.0},
        *({**case, "K": 4, "N": 6} for case in LOSS_CASES),
    ],
    ids=loss_id,
)
def test_compiled_steps_follow_the_torch_steps(dtype, atol, rtol, shape):
    """Same minibatches, a few hundred steps, saved steps inside and at the ends of blocks, every loss: W and the
    minibatch losses agree to the precision's rounding."""
    saved_steps = [0, 1, 15, 16, 17, 100, 250]
    runs = [engine(compiled, dtype=dtype, **shape).run(250, saved_steps) for compiled in (False, True)]
    (W_torch, loss_torch), (W_compiled, loss_compiled) = runs
    assert (W_torch[-1] - W_torch[0]).abs().max() > 0.05  # the weights did move
    torch.testing.assert_close(W_compiled, W_torch, atol=atol, rtol=rtol)
    torch.testing.assert_close(loss_compiled, loss_torch, atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_compiled_binary_sgd_follows_the_torch_steps(dtype):
    """The fixed-set source (label width 1), epochs ending in a remainder minibatch on a second engine."""
    s = BinarySettings(N=6, d=3, train_size=100, batch=16, epochs=4, lr=0.5, dtype=dtype)
    train_set = make_binary_set("train", s.train_size, s.d, s.N, s.labels, None, seed=0)
    W = {compiled: FixedSetSGD(s, train_set, compiled=compiled).run(s.epochs, [0, 3, 7, 28])[0] for compiled in (0, 1)}
    atol = 1e-13 if dtype == "float64" else 1e-6
    assert (W[0][-1] - W[0][0]).abs().max() > 0.01
    torch.testing.assert_close(W[1], W[0], atol=atol, rtol=0)


def test_the_compiled_path_is_the_cpu_default():
    assert engine(None).compiled and engine(None, loss="squentropy").compiled
    assert not engine(False).compiled


@njit
def _exp_all(x, out):
    for i in range(x.size):
        out[i] = exp_nonpositive(x[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_of_the_softmax(dtype):
    """exp on x ≤ 0 against numpy's float64 exp of the same number: float32 within 2 ulp down to the smallest normal
    number (below it, within 2^-125 of 0); float64 (the library's exp) within 1 ulp."""
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


def test_compiled_gather_of_a_fixed_set_is_torchs_copy():
    """The fixed-set source: the same prompts in the same places, blocks crossing from one pass into the next."""
    s = BinarySettings(N=6, d=3, train_size=80, batch=16, epochs=1)  # 5 minibatches a pass
    train_set = make_binary_set("train", s.train_size, s.d, s.N, s.labels, None, seed=0)
    full = [FixedSetSGD(s, train_set, compiled=compiled).engines[0][0] for compiled in (False, True)]
    for _ in range(5):  # blocks of 3 minibatches: the second starts a new pass after its second minibatch
        for engine in full:
            engine.prepare_block(3)
        assert torch.equal(full[0].H[:3], full[1].H[:3]) and torch.equal(full[0].U[:3], full[1].U[:3])
