"""The GPU engine (onenn.training.gpu): the CPU engine's weights on the same minibatches, the stream drawn inside its
kernel, the same run as the CPU engine from the same seed, and the GPU check (onenn.training.train). Without a GPU
it runs on the CPU in Triton's interpreter (tests/conftest.py switches it on), kept small; on a GPU (the GPU check
runs this file there), compiled on CUDA."""

import json
import logging
import os
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

try:
    import triton
    import triton.language as tl
except ImportError:
    if os.environ.get("CI"):  # .ci/run installs triton (workflow/install.sh): there these tests must run
        raise
    pytest.skip("triton is not installed (workflow/envs/triton.txt)", allow_module_level=True)

from onenn.analysis.evaluate import evaluate_run
from onenn.base.io import save_arrays
from onenn.jobs.evaluate import evaluate_job
from onenn.jobs.train import train_job
from onenn.maths import stream
from onenn.maths.losses import Loss
from onenn.maths.prompts import make_test_set, separated_prompts
from onenn.training import cpu_stream
from onenn.training import train as engine_check
from onenn.training import train as training
from onenn.training.gpu import NUM_WARPS, GpuEngine, auto_chunk, draw_chunk, interpreting, tile_sizes
from onenn.training.train import TrainSettings, make_engine, train
from tests.helpers import LOSS_CASES, loss_id

#: where the kernel runs: CPU tensors in the interpreter, else the GPU
DEVICE = torch.device("cpu" if interpreting() else "cuda")
pytestmark = pytest.mark.skipif(
    DEVICE.type == "cuda" and not torch.cuda.is_available(), reason="TRITON_INTERPRET is off and there is no GPU"
)

#: tiny (D = 8), with a step large enough that W moves a lot
SMALL = TrainSettings(d=4, N=6, K=3, batch=7, lr=0.5, steps=200, n_eval=5, seed=3, device="cpu", dtype="float64")


def key(s: TrainSettings) -> int:
    """The run's minibatch key."""
    return stream.stream_key(s.seed, "minibatches")


def fused(s: TrainSettings, W: torch.Tensor, **options) -> GpuEngine:
    return GpuEngine(W, d=s.d, N=s.N, K=s.K, batch=s.batch, lr=s.lr, loss=Loss(s.loss, s.c), key=key(s), **options)


def start(s: TrainSettings) -> torch.Tensor:
    """The run's W0 on the kernel's device."""
    return torch.from_numpy(make_engine(s, "cpu").W).to(DEVICE)


def engine_minibatches(s: TrainSettings, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Steps ``0 .. steps - 1`` as the CPU engine draws them: Z (steps, d, N+1, B) float32, C (steps, N, B)."""
    Z, C = np.empty((steps, s.d, s.N + 1, s.batch), np.float32), np.empty((steps, s.N, s.batch), np.int64)
    cpu_stream.draw_block(Z, C, key(s), 0, steps, s.K, s.d)
    return torch.from_numpy(Z), torch.from_numpy(C)


@triton.jit
def stream_kernel(z_ptr, c_ptr, key, first_step, n_steps, d: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                  B: tl.constexpr, NP: tl.constexpr, XP: tl.constexpr, BC: tl.constexpr):  # fmt: skip
    """What the training kernel draws (``draw_chunk``) at steps ``first_step ..``, written out in Z's and C's layout."""
    T: tl.constexpr = N + 1
    k = tl.arange(0, XP)
    j = tl.arange(0, NP)
    for i in range(n_steps):
        z_step = z_ptr + i * (d * T * B)
        for b0 in range(0, B, BC):
            zc, zq, cls = draw_chunk(key, first_step + i, b0, d, N, K, B, NP, XP, BC)
            b = b0 + tl.arange(0, BC)
            ok = b[:, None] < B
            token = ok & (j[None, :] < N)
            k3, j3, b3 = k[None, None, :], j[None, :, None], b[:, None, None]
            tl.store(z_step + (k3 * T + j3) * B + b3, zc, mask=token[:, :, None] & (k3 < d))
            tl.store(z_step + (k[None, :] * T + N) * B + b[:, None], zq, mask=ok & (k[None, :] < d))
            tl.store(c_ptr + i * (N * B) + j[None, :] * B + b[:, None], cls.to(tl.int64), mask=token)


def draw_stream(key: int, first_step: int, steps: int, *, d: int, N: int, K: int, batch: int, device) -> tuple:
    """The GPU engine's minibatches of steps ``first_step ..``: Z (steps, d, N+1, B) float32, C (steps, N, B)."""
    Z = torch.zeros(steps, d, N + 1, batch, dtype=torch.float32, device=device)
    C = torch.zeros(steps, N, batch, dtype=torch.int64, device=device)
    t, chunk = tile_sizes(d, N, K), auto_chunk(d, N, K, batch, torch.float32, NUM_WARPS)
    stream_kernel[(1,)](Z, C, key, first_step, steps, d=d, N=N, K=K, B=batch, BC=chunk, NP=t["NP"], XP=t["XP"])
    return Z, C


#: (steps, atol): float64 to round-off; float32 to its own rounding over fewer steps (on a GPU with its faster,
#: less exact exp and division)
PRECISIONS = {"float64": (150, 1e-12), "float32": (60, 2e-6 if DEVICE.type == "cpu" else 2e-5)}
SHAPES = [{"N": 5, "K": 10, "epsilon": 0.5}, {"N": 1, "K": 2, "d": 3}]


#: every loss in float32 and the padded shapes in float64 by default; every loss in float64 too under ``-m slow``
KERNEL_CASES = [(loss, "float32") for loss in LOSS_CASES] + [(changes, "float64") for changes in SHAPES]
SLOW_KERNEL_CASES = [pytest.param(loss, "float64", marks=pytest.mark.slow) for loss in LOSS_CASES]


@pytest.mark.parametrize(
    "changes,dtype",
    KERNEL_CASES + SLOW_KERNEL_CASES,
    ids=lambda value: loss_id(value) if isinstance(value, dict) else value,
)
def test_kernel_equals_the_cpu_engine_on_the_same_minibatches(changes, dtype):
    """Every loss in both precisions, padded shapes (N = 5, D = 16 for K = 10; N = 1) and a random start: the
    kernel fed the CPU engine's minibatches gives the CPU engine's weights at every saved step and their
    minibatch losses."""
    steps, atol = PRECISIONS[dtype]
    steps = steps if changes in LOSS_CASES else 80
    s = replace(SMALL, dtype=dtype, **changes)
    saved = [0, 1, steps // 3, steps // 2, steps]
    compiled = make_engine(s, "cpu")
    chunk = 4 if changes.get("loss") == "square" else 8  # two chunks (the second partial) for the square loss
    minibatches = tuple(t.to(DEVICE) for t in engine_minibatches(s, steps))
    kernel = fused(s, torch.from_numpy(compiled.W.copy()).to(DEVICE), minibatches=minibatches, chunk=chunk, block=64)
    W_compiled, loss_compiled = map(torch.from_numpy, compiled.run(steps, saved))
    W_kernel, loss_kernel = (t.cpu() for t in kernel.run(steps, saved))
    assert (W_compiled[-1] - W_compiled[0]).abs().max() > 0.03  # the weights did move
    torch.testing.assert_close(W_kernel, W_compiled, rtol=0, atol=atol)
    torch.testing.assert_close(loss_kernel, loss_compiled, rtol=atol, atol=0)


def test_progress_is_called_after_each_launch_and_changes_nothing():
    """``run``'s ``progress`` gets the steps done after each launch (a launch also ends at a saved step) and the
    launch's last minibatch loss, a 0-d tensor read only by a reporter that writes a line; the run is the same."""
    W0 = start(SMALL)
    calls = []
    quiet = fused(SMALL, W0.clone(), block=4).run(10, [0, 6, 10])
    reported = fused(SMALL, W0.clone(), block=4).run(10, [0, 6, 10], lambda *args: calls.append(args))
    for a, b in zip(quiet, reported, strict=True):
        assert torch.equal(a, b)
    assert [(step, steps) for step, steps, _ in calls] == [(4, 10), (6, 10), (10, 10)]
    assert [float(loss) for _, _, loss in calls] == [float(reported[1][t - 1]) for t in (4, 6, 10)]


def test_in_kernel_draws_are_the_stream():
    """Training with the minibatches drawn inside the kernel is bit for bit training on ``draw_stream``'s, and
    those are the stream's (``onenn.maths.stream.minibatch``, the numpy reference): the classes bit for bit, the normals
    within a few ulps (the interpreter's or the device's log, cos and sin)."""
    s = replace(SMALL, loss="squentropy")
    W0 = start(s)
    drawing = fused(s, W0.clone(), block=7)
    Z, C = draw_stream(key(s), 0, 20, **shape(s))
    reading = fused(s, W0.clone(), minibatches=(Z, C))
    for a, b in zip(drawing.run(20, [0, 5, 20]), reading.run(20, [0, 5, 20])):
        assert torch.equal(a, b)
    for t in (0, 7, 19):
        z, c = stream.minibatch(key(s), t, s.d, s.N, s.K, s.batch)
        assert np.array_equal(C[t].cpu().numpy(), c)
        np.testing.assert_allclose(Z[t].cpu().numpy(), z, rtol=4e-6, atol=4e-6)


def shape(s: TrainSettings) -> dict:
    return {"d": s.d, "N": s.N, "K": s.K, "batch": s.batch, "device": DEVICE}


def test_the_stream_does_not_depend_on_the_block_size_nor_the_run_length():
    s = replace(SMALL, dtype="float32")
    W0 = start(s)
    runs = [fused(s, W0.clone(), block=block).run(12, [0, 8, 12]) for block in (1, 5, 1024)]
    for W, losses in runs[1:]:
        assert torch.equal(W, runs[0][0]) and torch.equal(losses, runs[0][1])
    in_two = fused(s, W0.clone())
    first, _ = in_two.run(8, [8])
    second, _ = in_two.run(4, [4])  # goes on with the stream: steps 8..11
    assert torch.equal(first[0], runs[0][0][1]) and torch.equal(second[0], runs[0][0][2])
    Z, C = draw_stream(key(s), 0, 12, **shape(s))
    Z_late, C_late = draw_stream(key(s), 9, 3, **shape(s))
    assert torch.equal(Z_late, Z[9:]) and torch.equal(C_late, C[9:])


def z_score(mean: float, expected: float, sd: float, n: int) -> float:
    return abs(mean - expected) / (sd / np.sqrt(n))


def test_the_stream_is_gaussian_uniform_and_independent():
    """Moments and frequencies within 4.5 standard errors (a false alarm about once in 10⁵ a check)."""
    d, N, K, B, steps = 4, 7, 5, 64, 32
    keys = [stream.stream_key(seed, "minibatches") for seed in (11, 12)]
    Z, C = (t.double().cpu().numpy() for t in draw_stream(keys[0], 0, steps, d=d, N=N, K=K, batch=B, device=DEVICE))
    z, n = Z.ravel(), Z.size
    assert z_score(z.mean(), 0, 1, n) < 4.5
    assert z_score((z**2).mean(), 1, np.sqrt(2), n) < 4.5
    assert z_score((z**4).mean(), 3, np.sqrt(96), n) < 4.5  # E z⁸ − (E z⁴)² = 105 − 9
    # inputs on the sphere: each coordinate has mean 0 and second moment 1/d, coordinates uncorrelated
    x = Z / np.linalg.norm(Z, axis=1, keepdims=True)  # (steps, d, N+1, B)
    coords = x.transpose(1, 0, 2, 3).reshape(d, -1)
    m = coords.shape[1]
    sd_sq = np.sqrt(3 / (d * (d + 2)) - 1 / d**2)  # sd of x_k²: E x_k⁴ = 3 / (d (d + 2))
    for k in range(d):
        assert z_score(coords[k].mean(), 0, np.sqrt(1 / d), m) < 4.5
        assert z_score((coords[k] ** 2).mean(), 1 / d, sd_sq, m) < 4.5
    sd_cross = np.sqrt(1 / (d * (d + 2)))  # E x_1² x_2² = 1 / (d (d + 2))
    assert z_score((coords[0] * coords[1]).mean(), 0, sd_cross, m) < 4.5
    # classes: every class with frequency 1/K
    c = C.ravel().astype(int)
    assert set(np.unique(c)) == set(range(K))
    p = 1 / K
    for k in range(K):
        assert z_score((c == k).mean(), p, np.sqrt(p * (1 - p)), c.size) < 4.5
    # independence: neighbouring numbers, consecutive steps, two seeds, Gaussians and classes
    assert z_score((Z[:, :-1] * Z[:, 1:]).mean(), 0, 1, Z[:, 1:].size) < 4.5  # coordinates k, k+1
    assert z_score((Z[:-1] * Z[1:]).mean(), 0, 1, Z[1:].size) < 4.5  # steps t, t+1
    Z_other, C_other = (
        t.double().cpu().numpy() for t in draw_stream(keys[1], 0, steps, d=d, N=N, K=K, batch=B, device=DEVICE)
    )
    assert z_score((Z * Z_other).mean(), 0, 1, n) < 4.5
    assert not np.array_equal(C, C_other)
    same = (C[:-1] == C[1:]).mean()  # two classes drawn independently agree with probability 1/K
    assert z_score(same, p, np.sqrt(p * (1 - p)), C[1:].size) < 4.5
    assert z_score((C == C_other).mean(), p, np.sqrt(p * (1 - p)), C.size) < 4.5
    centred = c - (K - 1) / 2
    assert z_score((Z[:, 0, :N, :].ravel() * centred).mean(), 0, np.sqrt((K**2 - 1) / 12), c.size) < 4.5


#: a short run that learns: in 60 steps W moves by about 0.1, far more than float32 round-off
SHORT = TrainSettings(d=4, N=4, K=3, batch=16, lr=0.5, steps=60, n_eval=6, seed=5, device="cpu")


@pytest.mark.parametrize(
    "dtype,loss",
    [("float32", "square"), ("float32", "cross_entropy")]
    + [pytest.param("float64", loss, marks=pytest.mark.slow) for loss in ("square", "mixture")],
)
def test_the_same_seed_gives_the_same_run_on_the_cpu_engine_and_the_kernel(dtype, loss):
    """The issue's requirement: from the same seed, the CPU engine and the GPU engine (each drawing
    its own minibatches) give the same W at every saved step to float32 round-off (``engine_check.tolerance``: one
    rounding of each weight a step), and the same minibatch losses. Another seed gives another run, by far more."""
    s = replace(SHORT, dtype=dtype, loss=loss, c=0.5 if loss == "mixture" else 0.0)
    cpu = train(s, "cpu")
    kernel = train(replace(s, device=DEVICE.type), "gpu")
    assert np.array_equal(kernel["saved_steps"], cpu["saved_steps"]) and len(cpu["saved_steps"]) >= 5
    tolerance = engine_check.tolerance(s.steps, np.abs(cpu["W"]).max())
    assert np.abs(kernel["W"] - cpu["W"]).max() <= tolerance
    np.testing.assert_allclose(kernel["minibatch_loss"], cpu["minibatch_loss"], rtol=1e-5)
    assert np.abs(cpu["W"][-1] - cpu["W"][0]).max() > 1000 * tolerance  # W moved
    other = train(replace(s, seed=s.seed + 1), "cpu")
    assert np.abs(other["W"][-1] - cpu["W"][-1]).max() > 100 * tolerance


@pytest.mark.slow  # the same W on both engines: test_the_same_seed_gives_the_same_run_on_the_cpu_engine_and_the_kernel
def test_a_short_run_learns_the_same_on_both_engines():
    """Separated accuracy and (ξ1, ξ2) after 100 steps: the same on both engines from the same seed (to round-off),
    and learned: the accuracy rises from below 0.65 to above 0.8."""
    s = TrainSettings(d=4, N=4, K=3, batch=32, lr=0.5, steps=100, n_eval=3, device="cpu", dtype="float32")
    test = separated_prompts(2000, s.d, s.N, s.K, 0.1, np.random.default_rng(0))

    def metrics(engine: str) -> np.ndarray:
        r = train(replace(s, device=DEVICE.type if engine == "gpu" else "cpu"), engine)
        table = evaluate_run(r["saved_steps"], r["W"], {"separated": test}, s.K, "square")
        return table[["accuracy", "xi1", "xi2"]].to_numpy()

    compiled, kernel = metrics("cpu"), metrics("gpu")
    assert compiled[0, 0] < 0.65 and compiled[-1, 0] > 0.8
    np.testing.assert_allclose(kernel, compiled, rtol=1e-5, atol=1e-6)


# --- the GPU check ---------------------------------------------------------------------------------------------

TINY = TrainSettings(d=4, N=6, K=3, batch=7, lr=0.5, steps=10, n_eval=3, seed=2, device="cpu")


def shifted_by_one_step(monkeypatch) -> None:
    """A kernel made wrong on purpose: each launch draws the minibatches of the step after the one it trains."""
    launch = GpuEngine.launch

    def shifted(self: GpuEngine, n: int, losses: torch.Tensor) -> None:
        self.step += 1
        launch(self, n, losses)
        self.step -= 1

    monkeypatch.setattr(GpuEngine, "launch", shifted)


def test_the_fused_check_passes_records_and_is_made_once_a_device(monkeypatch):
    monkeypatch.setattr(engine_check, "RESULTS", {})
    record = engine_check.check_once(TINY, DEVICE, steps=32)
    assert record["passed"] and record["steps"] == 32 and record["device"] == str(DEVICE)
    (first,) = record["tries"]  # passed at once: no second seed
    assert first["seed"] == TINY.seed and first["max_abs_dW"] <= first["tolerance"]
    assert first["tolerance"] == pytest.approx(32 * 2.0**-23 * 3.0, rel=0.05)  # max |W| about σ = 3
    assert record["settings"] == "d=4, N=6, K=3, batch=7, lr=0.5, loss square (c=0.0), float32"
    json.dumps(record)  # it goes into run.json
    shifted_by_one_step(monkeypatch)  # a later run in the process is not checked again: the record is reused
    assert engine_check.check_once(replace(TINY, loss="cross_entropy"), DEVICE, steps=32) is record


def test_a_kernel_that_differs_from_the_cpu_engine_is_stopped_with_the_difference_and_the_fallback(monkeypatch):
    monkeypatch.setattr(engine_check, "RESULTS", {})
    shifted_by_one_step(monkeypatch)
    with pytest.raises(engine_check.FusedKernelMismatch) as error:
        engine_check.check_once(TINY, DEVICE, steps=32)
    message = str(error.value)
    print(message)  # for the record: pytest -s shows it
    record = engine_check.RESULTS[str(DEVICE)]
    assert not record["passed"] and [t["seed"] for t in record["tries"]] == [2, 3]  # retried from the next seed
    for t in record["tries"]:
        assert t["max_abs_dW"] > 10 * t["tolerance"]
        assert f"seed {t['seed']}: max |ΔW| = {t['max_abs_dW']:.3g} at step {t['at_step']}" in message
        assert f"(tolerance {t['tolerance']:.3g})" in message
    assert message.startswith(f"the GPU engine does not reproduce the CPU engine on {DEVICE}: 32 steps")
    assert "beyond float32 round-off" in message
    assert "device: cpu in the config" in message
    monkeypatch.undo()  # a later run in the process fails at once, from the record, without running the kernel
    monkeypatch.setattr(engine_check, "RESULTS", {str(DEVICE): record})
    monkeypatch.setattr(engine_check, "run_check", None)
    with pytest.raises(engine_check.FusedKernelMismatch, match="does not reproduce the CPU engine"):
        engine_check.check_once(TINY, DEVICE)


def test_the_check_compares_weights_only_where_one_run_diverged():
    W = np.zeros((3, 2, 2))
    W[0, 0, 0] = 1e-3
    kernel = W.copy()
    kernel[1, 1, 1] = np.nan  # the kernel alone diverged at the second saved step
    kernel[2, 0, 1] = W[2, 0, 1] = np.inf  # both at the third
    assert engine_check.differences(kernel, W).tolist() == [0.0, np.inf, 0.0]
    finite = np.zeros((3, 2, 2))
    assert engine_check.differences(finite + [[2e-6, 0], [0, -3e-6]], finite) == pytest.approx([3e-6] * 3)


def test_a_fused_training_job_runs_the_check_first_and_records_it(monkeypatch, tmp_path):
    """Where the fused engine trains on a checked device (CUDA; here the interpreter's CPU, put on the list), the
    job's run record holds the check's record; a CPU job's record has no such entry. The evaluation's table has
    the same columns for both."""
    settings = replace(TINY, steps=5).to_dict()
    test_set = tmp_path / "separated.npz"
    save_arrays(test_set, **make_test_set("separated", 16, TINY.d, TINY.N, TINY.K, 0.1, 7))

    def columns(name: str) -> list[str]:
        out = tmp_path / f"{name}.parquet"
        evaluate_job(
            {"K": TINY.K, "loss": TINY.loss, "c": TINY.c, "delta": 0.1, "test_size": 16},
            identity={"seed": 2},
            weights_path=str(tmp_path / f"{name}.npz"),
            run_path=str(tmp_path / f"{name}.json"),
            test_set_paths={"separated": str(test_set)},
            output=str(out),
            log=logging.getLogger("test"),
        )
        return list(pd.read_parquet(out).columns)

    def job(name: str) -> dict:
        run_path = tmp_path / f"{name}.json"
        train_job(
            settings,
            identity={"seed": 2},
            weights_path=str(tmp_path / f"{name}.npz"),
            run_path=str(run_path),
            threads=1,
            log=logging.getLogger("test"),
        )
        return json.loads(run_path.read_text())

    assert "fused_check" not in job("cpu")
    monkeypatch.setattr(engine_check, "RESULTS", {})
    monkeypatch.setattr(engine_check, "STEPS", 16)
    monkeypatch.setattr(engine_check, "CHECKED", ("cuda", "cpu"))
    monkeypatch.setattr(
        training,
        "train",
        lambda s, engine="auto", progress=None: train(replace(s, device=DEVICE.type), "gpu", progress=progress),
    )
    record = job("gpu")
    assert record["fused_check"] == engine_check.RESULTS[str(DEVICE)] and record["fused_check"]["passed"]
    assert columns("gpu") == columns("cpu") and "fused_check" not in columns("cpu")
    shifted_by_one_step(monkeypatch)
    monkeypatch.setattr(engine_check, "RESULTS", {})
    with pytest.raises(engine_check.FusedKernelMismatch):
        job("wrong")
    assert not (tmp_path / "wrong.json").exists()  # stopped before training


def test_the_engine_is_chosen_by_device_and_its_arguments_are_checked():
    s = replace(SMALL, steps=3)
    assert type(make_engine(s)).__name__ == "Engine"  # auto on the CPU: the CPU engine
    on_device = replace(s, device=DEVICE.type)
    assert isinstance(make_engine(on_device, "gpu"), GpuEngine)
    assert train(on_device, "gpu")["device"].startswith(DEVICE.type)
    if DEVICE.type == "cuda":
        assert isinstance(make_engine(on_device), GpuEngine)  # auto on CUDA: the GPU engine
    for unknown in ("triton", "eager"):
        with pytest.raises(ValueError, match=f"engine must be one of auto, cpu, gpu; got '{unknown}'"):
            make_engine(s, unknown)
    W = make_engine(on_device, "gpu").W
    with pytest.raises(ValueError, match=r"W must be \(D, D\) = \(9, 9\)"):
        fused(replace(s, K=4), W)
    with pytest.raises(ValueError, match="W must be a contiguous float32 or float64 tensor"):
        fused(s, W.T)
    with pytest.raises(ValueError, match="saved_steps must be sorted and lie in 0..5"):
        fused(s, W).run(5, [0, 6])
    with pytest.raises(ValueError, match="minibatches hold 4 steps; the run needs 5"):
        fused(s, W, minibatches=engine_minibatches(s, 4)).run(5)
    with pytest.raises(ValueError, match="minibatches must be Z"):
        fused(s, W, minibatches=engine_minibatches(replace(s, N=5), 4))
