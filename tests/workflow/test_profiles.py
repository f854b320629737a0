"""The profiles' plans: where training goes and how many GPUs it asks for (dry runs, no cluster needed); the
local profile loads by itself and the others by name, through the top-level `profiles` link."""

import os
import re
import subprocess

import pytest

from tests.workflow.helpers import ROOT, copy_workflow, snakemake

RESOURCES = re.compile(r"^\s*resources: (.*)$")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    workdir = copy_workflow(tmp_path_factory.mktemp("profiles"))
    os.symlink(os.readlink(ROOT / "profiles"), workdir / "profiles")  # as the repository has it
    return workdir


def train_resources(workdir, profile: str | None, *configfiles: str) -> list[dict[str, str]]:
    """The resources of every planned training job of the quick preset under ``profile``, named by its name
    (None: none named, so Snakemake loads the default one by itself)."""
    named = ("--workflow-profile", profile) if profile else ()
    done = snakemake(workdir, "-n", *named, configfiles=configfiles)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = f"Using workflow specific profile profiles/{profile or 'default'} for setting default command line"
    assert loaded in done.stderr, done.stderr[-3000:]
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
    assert {r["gpu"] for r in train_resources(workdir, None)} == {"0"}


def test_the_profiles_link_is_tracked_by_git_and_points_at_workflow_profiles():
    assert (ROOT / "profiles").is_symlink() and os.readlink(ROOT / "profiles") == "workflow/profiles"
    if (ROOT / ".git").exists():
        staged = subprocess.run(
            ["git", "ls-files", "-s", "profiles"], cwd=ROOT, capture_output=True, text=True, check=True
        )
        assert staged.stdout.startswith("120000 "), staged  # a symbolic link, not a copy


def test_slurm_cpu_profile_trains_on_cpus(workdir):
    resources = train_resources(workdir, "slurm-cpu")
    assert {(r["gpu"], r["slurm_partition"]) for r in resources} == {("0", "cpu")}


def test_slurm_profile_asks_one_gpu_per_training_unless_the_device_is_cpu(workdir):
    resources = train_resources(workdir, "slurm")
    assert {(r["gpu"], r["slurm_partition"]) for r in resources} == {("1", "gpu")}  # device: auto
    (workdir / "cpu.yaml").write_text("defaults:\n  device: cpu\n")
    assert {r["gpu"] for r in train_resources(workdir, "slurm", "cpu.yaml")} == {"0"}
