"""Provenance: every run record, every experiment table and the headline table (and with it the report) carry the
versions of python, torch, numba, numpy and snakemake that made them, as importlib.metadata reports them."""

import logging
import platform
import subprocess
import sys
from importlib.metadata import version

from onenn.analysis.report import markdown_to_html
from onenn.analysis.summary import (
    scaling_markdown,
    scaling_summary,
    summarise,
    to_markdown,
    train_markdown,
    train_summary,
)
from onenn.base import provenance
from onenn.base.io import load_json, save_arrays
from onenn.jobs.train import binary_train_job, train_job
from onenn.prompts import make_binary_set
from onenn.training.binary import BinarySettings
from onenn.training.train import TrainSettings
from tests.test_summary import scaling_table, train_table

LOG = logging.getLogger("test")
EXPECTED = {
    "python": platform.python_version(),
    "torch": version("torch"),
    "numba": version("numba"),
    "numpy": version("numpy"),
    "snakemake": version("snakemake"),
}
MADE_WITH = (
    f"This table was made with python {EXPECTED['python']}, torch {EXPECTED['torch']}, numba {EXPECTED['numba']}, "
    f"numpy {EXPECTED['numpy']}, snakemake {EXPECTED['snakemake']}."
)


def recorded(record: dict) -> dict:
    return {key: record.get(key) for key in EXPECTED}


def test_versions_are_what_importlib_metadata_reports():
    assert provenance.versions() == EXPECTED
    assert tuple(provenance.versions()) == provenance.KEYS
    assert provenance.package_version("no-such-distribution-onenn") == provenance.MISSING


def test_reading_the_versions_does_not_import_torch():
    code = "import sys, onenn.base.provenance, onenn.analysis.summary; onenn.base.provenance.versions(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_training_run_record_carries_the_versions(tmp_path):
    identity = {"experiment": "e", "variant": "default", "seed": "0"}
    train_job(
        TrainSettings(steps=4, n_eval=2, device="cpu").to_dict(),
        identity=identity,
        weights_path=str(tmp_path / "weights.npz"),
        run_path=str(tmp_path / "run.json"),
        threads=1,
        log=LOG,
    )
    assert recorded(load_json(tmp_path / "run.json")) == EXPECTED


def test_binary_run_record_carries_the_versions(tmp_path):
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
    assert recorded(load_json(tmp_path / "run.json")) == EXPECTED


def test_headline_table_and_its_page_carry_the_versions():
    summary = summarise({"e": train_table(), "s": scaling_table()}, {"e": train_summary, "s": scaling_summary})
    for key, value in EXPECTED.items():
        assert summary[key].dtype == "string" and (summary[key] == value).all(), key
    markdown = to_markdown(summary, {"train": train_markdown, "scaling": scaling_markdown})
    assert markdown.endswith(f"## Software\n\n{MADE_WITH}\n")
    assert f"<p>{MADE_WITH}</p>" in markdown_to_html(markdown, title="Headline table")
