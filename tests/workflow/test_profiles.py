"""The profiles' plans: where training goes and how many GPUs it asks for (dry runs, no cluster needed)."""

import re

import pytest

from tests.workflow.helpers import copy_workflow, snakemake

RESOURCES = re.compile(r"^\s*resources: (.*)$")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("profiles"))


def train_resources(workdir, profile: str, *configfiles: str) -> list[dict[str, str]]:
    """The resources of every planned training job of the quick preset under ``profile``."""
    done = snakemake(workdir, "-n", "--workflow-profile", f"workflow/profiles/{profile}", configfiles=configfiles)
    assert done.returncode == 0, done.stderr[-3000:]
    out, found, in_train = done.stdout + done.stderr, [], False
    for line in out.splitlines():
        if re.match(r"^\s*(local)?rule \w+:$", line):
            in_train = line.strip() in ("rule train:", "localrule train:")
        elif in_train and (m := RESOURCES.match(line)):
            found.append(dict(item.split("=", 1) for item in m[1].split(", ")))
    assert found
    return found


def test_local_default_profile_asks_no_gpu_on_a_machine_without_one(workdir, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # as on this CPU-only machine, wherever the test runs
    assert {r["gpu"] for r in train_resources(workdir, "default")} == {"0"}


def test_slurm_cpu_profile_trains_on_cpus(workdir):
    resources = train_resources(workdir, "slurm-cpu")
    assert {(r["gpu"], r["slurm_partition"]) for r in resources} == {("0", "cpu")}


def test_slurm_profile_asks_one_gpu_per_training_unless_the_device_is_cpu(workdir):
    resources = train_resources(workdir, "slurm")
    assert {(r["gpu"], r["slurm_partition"]) for r in resources} == {("1", "gpu")}  # device: auto
    (workdir / "cpu.yaml").write_text("defaults:\n  device: cpu\n")
    assert {r["gpu"] for r in train_resources(workdir, "slurm", "cpu.yaml")} == {"0"}
