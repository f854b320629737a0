"""The GPU request of a training job: one GPU when it will train on one, none otherwise."""

import pytest

from onenn.plan.scheduling import train_gpus, visible_gpus


@pytest.mark.parametrize(
    "device,local,gpus_here,expected",
    [
        ("cpu", True, 0, 0),
        ("cpu", True, 2, 0),
        ("cpu", False, 0, 0),
        ("cuda", True, 0, 1),  # asks, and the job then fails with a clear error: no CUDA here
        ("cuda", False, 0, 1),
        ("auto", False, 0, 1),  # on a cluster the compute node has the GPU, not the login node
        ("auto", True, 1, 1),
        ("auto", True, 0, 0),  # a CPU-only machine: a local gpu limit must not serialise CPU training
    ],
)
def test_train_gpus(device, local, gpus_here, expected):
    assert train_gpus(device, local=local, gpus_here=gpus_here) == expected


def test_train_gpus_rejects_an_unknown_device():
    with pytest.raises(ValueError, match="device must be one of auto, cpu, cuda; got 'tpu'"):
        train_gpus("tpu", local=True, gpus_here=0)


def test_visible_gpus_reads_cuda_visible_devices_then_the_driver(tmp_path):
    driver = tmp_path / "gpus"
    assert visible_gpus({}, driver) == 0  # no driver folder
    driver.mkdir()
    for bus in ("0000:01:00.0", "0000:02:00.0"):
        (driver / bus).mkdir()
    assert visible_gpus({}, driver) == 2
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "1"}, driver) == 1
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "0,1,2"}, tmp_path / "none") == 3
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}, driver) == 0
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}, driver) == 0
