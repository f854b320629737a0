"""Provenance: every run record, every experiment table and the headline table (and with it the report) carry the
versions of python and of every package that shapes a number (torch, numba, numpy, snakemake, scipy, pandas, pyarrow,
seaborn, triton) that made them, as importlib.metadata reports them; a training run records the GPU it ran on.

The tests install fake distributions of those packages (a ``.dist-info`` folder on ``sys.path``, ahead of the real
ones) with versions made up here: a record carries exactly those, so it was read from the installed metadata when
it was made, not copied from anywhere else."""

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from onenn.analysis.markdown import markdown_to_html
from onenn.analysis.summary import (
    scaling_markdown,
    scaling_summary,
    summarise,
    to_markdown,
    train_markdown,
    train_summary,
)
from onenn.base import provenance
from onenn.base.io import load_json, save_arrays, save_table
from onenn.base.provenance import fingerprint
from onenn.jobs.summary import summary_job
from onenn.jobs.train import binary_train_job, train_job
from onenn.maths.prompts import make_binary_set
from onenn.training.binary import BinarySettings
from onenn.training.train import TrainSettings
from tests.configs import ROOT
from tests.helpers import made_with, recorded, scaling_table, train_table

LOG = logging.getLogger("test")
#: the made-up versions of the fake distributions
FAKE = {
    "torch": "97.1.2+fake",
    "numba": "98.3.4",
    "numpy": "99.5.6rc1",
    "snakemake": "96.7.8.post9",
    "scipy": "95.0",
    "pandas": "94.1",
    "pyarrow": "93.2",
    "seaborn": "92.3",
    "triton": "91.4",
}
#: this interpreter's version, from sys.version_info (the code reads platform.python_version)
PYTHON = ".".join(str(part) for part in sys.version_info[:3])


def install_fake_distribution(site: Path, name: str, version: str) -> None:
    """A distribution ``name`` of ``version`` as an installer leaves it: ``{name}-{version}.dist-info/METADATA``,
    with ``-`` in the folder's name written ``_``."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.fixture
def expected(tmp_path, monkeypatch) -> dict[str, str]:
    """The fake distributions, found before the real ones, and the versions a result must then record."""
    site = tmp_path / "site-packages"
    for name, version in FAKE.items():
        install_fake_distribution(site, name, version)
    monkeypatch.syspath_prepend(str(site))
    return {"python": PYTHON, **FAKE}


def test_versions_are_those_of_the_installed_distributions(expected):
    assert provenance.versions() == expected
    assert tuple(provenance.versions()) == provenance.KEYS
    assert {"scipy", "pandas", "pyarrow", "seaborn", "triton"} <= set(provenance.KEYS)


def test_a_package_that_is_not_installed_is_recorded_as_such(tmp_path, monkeypatch):
    name = "onenn-no-such-distribution"
    assert provenance.package_version(name) == "not installed"
    install_fake_distribution(tmp_path, name, "1.2.3")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert provenance.package_version(name) == "1.2.3"


def test_reading_the_versions_does_not_import_torch():
    code = "import sys, onenn.base.provenance, onenn.analysis.summary; onenn.base.provenance.versions(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_gpu_is_recorded_only_where_the_process_used_one(monkeypatch):
    import torch

    assert provenance.accelerator() == {"gpu": "none", "cuda": "none"}  # CUDA not initialised here
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA Made-Up 9000")
    monkeypatch.setattr(torch.version, "cuda", "99.9")
    assert provenance.accelerator() == {"gpu": "NVIDIA Made-Up 9000", "cuda": "99.9"}
    found = {"python": "3.11.7", "gpu": "NVIDIA Made-Up 9000", "cuda": "99.9"}
    assert provenance.describe(found) == "python 3.11.7, on NVIDIA Made-Up 9000 with CUDA 99.9"
    assert provenance.gpus_used(["none", "B", "A", "B"]) == "A; B" and provenance.gpus_used(["none"]) == "none"


def test_the_gpu_is_asked_only_of_a_torch_already_imported():
    code = "import sys, onenn.base.provenance as p; print(p.accelerator(), 'torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "{'gpu': 'none', 'cuda': 'none'} False"


def test_training_run_record_carries_the_versions(tmp_path, expected):
    identity = {"experiment": "e", "variant": "default", "seed": "0"}
    train_job(
        TrainSettings(steps=4, n_eval=2, device="cpu").to_dict(),
        identity=identity,
        weights_path=str(tmp_path / "weights.npz"),
        run_path=str(tmp_path / "run.json"),
        threads=1,
        log=LOG,
    )
    record = load_json(tmp_path / "run.json")
    assert recorded(record) == expected
    assert (record["gpu"], record["cuda"]) == ("none", "none")  # trained on the CPU


def test_binary_run_record_carries_the_versions(tmp_path, expected):
    s = BinarySettings(d=3, N=4, epochs=1, train_size=20, batch=10, n_eval=2)
    save_arrays(tmp_path / "train.npz", **make_binary_set("train", 20, 3, 4, "gaussian", None, seed=0))
    binary_train_job(
        s.to_dict(),
        identity={"experiment": "b", "variant": "default", "seed": "0"},
        train_path=str(tmp_path / "train.npz"),
        weights_path=str(tmp_path / "weights.npz"),
        run_path=str(tmp_path / "run.json"),
        threads=1,
        log=LOG,
    )
    assert recorded(load_json(tmp_path / "run.json")) == expected


def test_headline_table_and_its_page_carry_the_versions(expected):
    summary = summarise({"e": train_table(), "s": scaling_table()}, {"e": train_summary, "s": scaling_summary})
    for key, value in expected.items():
        assert summary[key].dtype == "string" and (summary[key] == value).all(), key
    markdown = to_markdown(summary, {"train": train_markdown, "scaling": scaling_markdown})
    sentence = made_with(expected)
    assert sentence == (
        f"This table was made with python {PYTHON}, torch 97.1.2+fake, numba 98.3.4, numpy 99.5.6rc1, "
        "snakemake 96.7.8.post9, scipy 95.0, pandas 94.1, pyarrow 93.2, seaborn 92.3, triton 91.4."
    )
    assert markdown.endswith(f"## Software\n\n{sentence}\n")
    assert f"<p>{sentence}</p>" in markdown_to_html(markdown, title="Headline table")


# --- onenn's own code -------------------------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def source_in(root: Path) -> str:
    """``provenance.source()`` of the onenn package under ``root``, in a fresh interpreter."""
    probe = "from onenn.base.provenance import source; print(source())"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "HOME": str(root)}
    return subprocess.run(
        [sys.executable, "-c", probe], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A git repository holding a copy of the onenn package, committed."""
    shutil.copytree(ROOT / "onenn", tmp_path / "onenn", ignore=shutil.ignore_patterns("__pycache__"))
    git("init", "-q", cwd=tmp_path)
    git("add", "onenn", cwd=tmp_path)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "code", cwd=tmp_path)
    return tmp_path


def test_code_from_a_checkout_is_its_commit_and_says_when_the_code_differs_from_it(checkout):
    commit = git("rev-parse", "HEAD", cwd=checkout)
    assert source_in(checkout) == f"git {commit[:12]}"
    (checkout / "results").mkdir()
    (checkout / "results/table.parquet").write_text("a result, not code")
    assert source_in(checkout) == f"git {commit[:12]}"  # outputs are not the code
    with (checkout / "onenn/maths/losses.py").open("a") as f:
        f.write("\n# edited\n")
    assert source_in(checkout) == f"git {commit[:12]} (modified)"


def test_code_outside_a_checkout_is_the_installed_version(tmp_path):
    shutil.copytree(ROOT / "onenn", tmp_path / "onenn", ignore=shutil.ignore_patterns("__pycache__"))
    assert source_in(tmp_path) == f"onenn {provenance.package_version('onenn')}"


def test_run_records_and_the_headline_table_carry_the_code_of_their_job(tmp_path):
    train_job(
        TrainSettings(steps=4, n_eval=2, device="cpu").to_dict(),
        identity={"experiment": "e", "variant": "default", "seed": "0"},
        weights_path=str(tmp_path / "weights.npz"),
        run_path=str(tmp_path / "run.json"),
        threads=1,
        log=LOG,
    )
    record = load_json(tmp_path / "run.json")
    assert record["code"] == fingerprint("onenn.jobs.train:train_job") and record["code_from"] == provenance.source()
    summary_path = tmp_path / "summary.parquet"
    save_table(tmp_path / "t.parquet", train_table())
    summary_job(
        {"e": str(tmp_path / "t.parquet")},
        {"e": "train"},
        table_path=str(summary_path),
        markdown_path=str(tmp_path / "summary.md"),
        log=LOG,
    )
    code = fingerprint("onenn.jobs.summary:summary_job")
    assert set(pd.read_parquet(summary_path)["code"]) == {code}
    assert f"onenn code {code} from {provenance.source()}." in (tmp_path / "summary.md").read_text()


def test_the_headline_names_the_gpus_its_runs_were_trained_on():
    table = train_table().assign(gpu="NVIDIA Made-Up 9000", cuda="99.9")
    summary = summarise({"e": table, "s": scaling_table()}, {"e": train_summary, "s": scaling_summary})
    assert set(summary.query("experiment == 'e'")["gpu"]) == {"NVIDIA Made-Up 9000"}
    assert set(summary.query("experiment == 's'")["gpu"]) == {"none"}  # no gpu column: not trained on one
    markdown = to_markdown(summary, {"train": train_markdown, "scaling": scaling_markdown})
    assert ", on NVIDIA Made-Up 9000 with CUDA 99.9." in markdown
