"""Every table the workflow writes describes each of its columns: the jobs, run at a tiny scale, write tables whose
columns are exactly those ``onenn.jobs.columns`` describes (a new column without a description, or a description
left after its column went, fails here), and every field of their Parquet schema carries its description."""

from __future__ import annotations

import ast
import logging
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

import onenn
from onenn.base import io, paths
from onenn.base.columns import BINARY_TEST_SETS, Undescribed
from onenn.jobs import columns
from onenn.jobs.beyond import audit_job
from onenn.jobs.claims import claims_job
from onenn.jobs.evaluate import evaluate_job
from onenn.jobs.summary import summary_job
from onenn.jobs.tables import table_job
from onenn.jobs.train import binary_train_job
from onenn.maths.prompts import make_binary_set
from onenn.plan import claims_file
from onenn.plan.kinds import KINDS
from onenn.training.binary import BinarySettings
from tests.configs import ROOT

LOG = logging.getLogger("test")
LANDSCAPE = {"d": 4, "N": 8, "xi1_range": [0, 2], "xi2_range": [1, 3], "grid": 3, "prompts": 64, "seed": 0}


def train_run(folder: Path) -> Path:
    """A multiclass run's table, as the API writes it with the workflow's evaluation job (kept from its
    temporary folder)."""
    kept = folder / "run_metrics.parquet"
    load = io.load_table

    def keep(path, **kwargs):
        shutil.copy(path, kept)
        shutil.copy(io.checksum_path(path), io.checksum_path(kept))
        return load(path, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(io, "load_table", keep)
        onenn.evaluate(onenn.train(steps=4, seeds=1, n_eval=2, test_size=64, experiment="t"))
    return kept


def binary_run(folder: Path) -> Path:
    s = BinarySettings(d=3, N=4, epochs=1, batch=8, train_size=16, n_eval=2)
    sets = {name: folder / f"{name}.npz" for name in BINARY_TEST_SETS}
    for name, path in sets.items():
        delta = 0.5 if name == "separated" else None
        io.save_arrays(path, **make_binary_set(name, 16, s.d, s.N, s.labels, delta, 0))
    identity = {"experiment": "b", "variant": "default", "seed": "0"}
    run = {"weights_path": str(folder / "weights.npz"), "run_path": str(folder / "run.json")}
    binary_train_job(s.to_dict(), identity=identity, train_path=str(sets["train"]), threads=1, log=LOG, **run)
    output = folder / "binary_run.parquet"
    settings = {**s.to_dict(), "delta": 0.5, "test_size": 16}
    set_paths = {name: str(path) for name, path in sets.items()}
    evaluate_job(
        settings, identity=identity, test_set_paths=set_paths, output=str(output), log=LOG, kind="binary", **run
    )
    return output


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, list[Path]]:
    """Table name (``onenn.jobs.columns.TABLES``) -> the files the jobs wrote of it: a run's or a variant's table
    and the experiment's (the table job's), the headline table and the scorecard."""
    folder = tmp_path_factory.mktemp("tables")
    out = {name: [] for name in columns.TABLES}
    experiments = {}

    def table(kind: str, experiment: str, inputs: list[Path], settings: dict | None = None) -> None:
        path = folder / f"{experiment}.parquet"
        table_job(kind, [str(p) for p in inputs], settings or {}, experiment=experiment, output=str(path), log=LOG)
        out[kind] += [*inputs, path]
        experiments[experiment] = (kind, path)

    table("train", "t", [train_run(folder)])
    table("binary", "b", [binary_run(folder)])
    panels = {"by_K": {"xi": [[2, 5]], "K": [2, 5], "prompts": 200}}
    table("scaling", "s", [], {"d": 4, "N": 8, "seed": 1, "ci_level": 0.9, "panels": panels})
    table("landscape", "l", [], LANDSCAPE)
    audit = {"N": 8, "sigma": 2.0, "lr": 0.5, "steps": 20, "sample_time_end": 1e3, "time_end": 1e5, "n_plain": 128,
             "n_max": 8, "n_gap": 8, "t1_nodes": 64, "gap_nodes": 16, "third_nodes": 2, "n_eval": 5}  # fmt: skip
    audit_job(audit, identity={"experiment": "a", "variant": "sigma=2"}, output=str(folder / "a_v.parquet"), log=LOG)
    table("audit", "a", [folder / "a_v.parquet"])

    summary_job(
        {name: str(path) for name, (_, path) in experiments.items()},
        {name: kind for name, (kind, _) in experiments.items()},
        table_path=str(folder / "summary.parquet"),
        markdown_path=str(folder / "summary.md"),
        log=LOG,
    )
    out["summary"].append(folder / "summary.parquet")
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    known = claims_file.catalogue(config)
    claims_job(
        str(ROOT / paths.CLAIMS_FILE),
        str(ROOT / paths.CLAIMS_SCHEMA),
        known,
        {},
        table_path=str(folder / "claims.parquet"),
        markdown_path=str(folder / "claims.md"),
        log=LOG,
    )
    out["claims"].append(folder / "claims.parquet")
    return out


def test_every_kind_has_its_tables_descriptions():
    assert set(KINDS) <= set(columns.TABLES)


@pytest.mark.parametrize("name", list(columns.TABLES))
def test_a_table_has_exactly_the_columns_described(written, name):
    described = columns.descriptions(name)
    assert written[name], f"no job of table {name!r} runs here: add it to the fixture `written`"
    for path in written[name]:
        found = pq.read_schema(path).names
        assert not set(found) - set(described), f"{path.name}: columns without a description"
        assert not set(described) - set(found), f"{path.name}: descriptions of columns it does not have"


@pytest.mark.parametrize("name", list(columns.TABLES))
def test_every_field_carries_its_description(written, name):
    described = columns.descriptions(name)
    for path in written[name]:
        for field in pq.read_schema(path):
            assert field.metadata == {io.DESCRIPTION: described[field.name].encode()}, (path.name, field.name)


def test_descriptions_are_one_line_each():
    for name in columns.TABLES:
        for column, text in columns.descriptions(name).items():
            assert text.strip() and "\n" not in text and "|" not in text, (name, column)


def test_the_same_settings_give_the_same_bytes(tmp_path):
    for run in ("one", "two"):
        table_job("landscape", [], LANDSCAPE, experiment="l", output=str(tmp_path / f"{run}.parquet"), log=LOG)
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "two.parquet").read_bytes()


def test_the_descriptions_leave_the_data_as_it_was(tmp_path):
    frame = pd.DataFrame({"experiment": ["e", "e"], "seed": [0, 1], "accuracy": [0.5, 1.0]})
    io.save_table(tmp_path / "t.parquet", frame, columns.descriptions("train"))
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"), frame)


def test_a_column_without_a_description_is_refused_by_name_and_nothing_is_written(tmp_path):
    frame = pd.DataFrame({"experiment": ["e"], "new_column": [1.0]})
    with pytest.raises(Undescribed, match=r"\['new_column'\].*no description"):
        io.save_table(tmp_path / "t.parquet", frame, columns.descriptions("train"))
    assert not list(tmp_path.iterdir())


def test_an_unknown_table_is_named_with_the_known_ones():
    with pytest.raises(ValueError, match="table must be one of train, binary"):
        columns.descriptions("trian")


def save_table_calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "save_table"
    ]


def test_every_table_the_package_writes_is_written_with_its_descriptions():
    calls = {path: save_table_calls(path) for path in sorted((ROOT / "onenn").rglob("*.py"))}
    assert sum(map(len, calls.values())) >= 5  # the kinds' jobs' writer, aggregate, evaluate, summary, claims
    for path, found in calls.items():
        for call in found:
            given = len(call.args) == 3 or any(k.arg == "descriptions" for k in call.keywords)
            assert given, f"{path.relative_to(ROOT)}:{call.lineno}: save_table without the table's descriptions"
