import numpy as np
import pytest
import torch

from onenn.maths.family import diagnostics
from onenn.maths.steps import log_spaced_steps
from onenn.training.train import TrainSettings, resolve_device, train


@pytest.mark.parametrize("steps,n", [(1, 2), (5, 2), (10, 48), (100_000, 48), (40_000, 41)])
def test_saved_steps_are_distinct_log_spaced_and_end_at_the_last_step(steps, n):
    s = log_spaced_steps(steps, n, refine=True)
    assert s[0] == 0 and s[-1] == steps
    assert np.all(np.diff(s) > 0)
    assert len(s) >= min(n, steps + 1)


@pytest.mark.parametrize("steps,n", [(10_000, 60), (2000, 40), (1000, 41)])
def test_recorded_steps_keep_the_coarse_grid_unless_refined(steps, n):
    """Without ``refine`` rounding may merge small steps (the reduced dynamics' records); with it, never."""
    coarse, fine = log_spaced_steps(steps, n), log_spaced_steps(steps, n, refine=True)
    assert coarse[0] == fine[0] == 0 and coarse[-1] == fine[-1] == steps
    assert len(coarse) < n <= len(fine)
    assert set(coarse) <= set(np.rint(np.geomspace(1, steps, n - 1))) | {0}
    assert list(log_spaced_steps(0, n)) == [0]
    with pytest.raises(ValueError, match="steps"):
        log_spaced_steps(-1, n)


def test_training_is_deterministic_and_seed_dependent():
    base = {"steps": 30, "n_eval": 5, "device": "cpu", "dtype": "float64"}
    a = train(TrainSettings(seed=0, **base))
    b = train(TrainSettings(seed=0, **base))
    c = train(TrainSettings(seed=1, **base))
    np.testing.assert_array_equal(a["W"], b["W"])
    assert not np.array_equal(a["W"], c["W"])


def test_training_from_w0_stays_near_the_family_and_grows_xi1():
    """Lemma 1 in practice: from W0 the iterates stay close to diag(ξ1 I, 0, −ξ2) and ξ1 increases."""
    r = train(TrainSettings(steps=300, n_eval=5, device="cpu", dtype="float64"))
    first, last = diagnostics(r["W"][0], 8, 3), diagnostics(r["W"][-1], 8, 3)
    assert first["xi1"] == 0 and first["xi2"] == 3.0 and first["dist_family"] == 0
    assert last["xi1"] > 0.01
    assert last["dist_family"] < 0.5 * last["xi1"] * np.sqrt(8)
    assert last["label_norm"] == 0.0  # label columns never move


def test_unknown_setting_and_device_are_rejected():
    with pytest.raises(ValueError, match=r"unknown training settings \['stepz'\]"):
        TrainSettings.from_dict({"stepz": 3})
    with pytest.raises(ValueError, match="device must be one of auto, cpu, cuda"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            resolve_device("cuda")
        assert resolve_device("auto").type == "cpu"


def test_device_type_asks_torch_only_where_a_gpu_driver_is_present(monkeypatch, tmp_path):
    """``device: auto`` is the CPU without asking torch where no GPU driver's file exists; where one does, and for
    ``cuda``, it is what torch says (``resolve_device``, replaced here by one that records the question)."""
    from onenn.training import train as T

    asked = []

    def torch_says(device):
        asked.append(device)
        return torch.device("cuda")

    monkeypatch.setattr(T, "resolve_device", torch_says)
    monkeypatch.setattr(T.sys, "platform", "linux")
    monkeypatch.setattr(T, "GPU_DRIVER_FILES", (str(tmp_path / "nvidia"),))
    assert T.device_type("auto") == "cpu" and T.device_type("cpu") == "cpu" and asked == []
    assert T.device_type("cuda") == "cuda" and asked == ["cuda"]
    (tmp_path / "nvidia").mkdir()  # a driver: auto asks torch, as make_engine did before
    assert T.device_type("auto") == "cuda" and asked == ["cuda", "auto"]
    assert T.device_type("cpu") == "cpu" and len(asked) == 2
    monkeypatch.setattr(T.sys, "platform", "win32")  # no cheap check there: torch is asked
    (tmp_path / "nvidia").rmdir()
    assert T.device_type("auto") == "cuda" and asked[-1] == "auto"
    monkeypatch.undo()  # resolve_device checks the name
    with pytest.raises(ValueError, match="device must be one of auto, cpu, cuda; got 'tpu'"):
        T.device_type("tpu")


def test_the_default_device_is_torchs_answer_on_this_machine():
    """Without the replacement: ``device_type`` agrees with ``resolve_device`` (CUDA where torch sees a GPU)."""
    from onenn.training.train import device_type

    assert device_type("auto") == resolve_device("auto").type
