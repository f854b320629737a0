"""Foreign files: a file copied with its checksum over another one's path (another test set, another seed's weights)
matches its ``.sha256`` but says what it is (its array ``identity``), and the job that reads it refuses it with
``DamagedFile`` naming the file, what it says it is, what the job expected and the remedy. The real jobs, on tiny
settings, at the paths the workflow gives their files. A missing checksum is warned about on stderr too."""

import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onenn.base import paths
from onenn.base.io import DamagedFile, checksum_path, load_arrays, save_arrays
from onenn.jobs import datasets
from onenn.jobs.evaluate import evaluate_job
from onenn.jobs.inputs import load_prompt_set
from onenn.jobs.train import binary_train_job, train_job
from onenn.maths.prompts import SET_ARRAYS
from onenn.training.train import TrainSettings

LOG = logging.getLogger("test")
D, N, K, SIZE, DELTA = 4, 6, 3, 16, 0.1
SETTINGS = TrainSettings(d=D, N=N, K=K, steps=4, n_eval=2, device="cpu").to_dict()
EVAL = {"K": K, "loss": SETTINGS["loss"], "c": SETTINGS["c"], "delta": DELTA, "test_size": SIZE}


def copy_over(source: Path, target: Path) -> None:
    """``source`` and its checksum copied over ``target`` and its checksum (``cp f f.sha256 there/``)."""
    shutil.copyfile(source, target)
    shutil.copyfile(checksum_path(source), checksum_path(target))


def make_sets(root: Path) -> dict[str, str]:
    sets = {}
    for name, pattern, delta in (("uniform", paths.UNIFORM_SET, None), ("separated", paths.SEPARATED_SET, DELTA)):
        sets[name] = str(root / pattern.format(d=D, N=N, K=K, size=SIZE, delta="0.1"))
        datasets.test_set_job(name, SIZE, D, N, K, delta, 0, sets[name], LOG)
    return sets


def run(root: Path, seed: int) -> dict[str, str]:
    """Train seed ``seed`` of a tiny run; its files' paths."""
    identity = {"experiment": "convergence", "variant": "N=6", "seed": str(seed)}
    run_dir = root / paths.RUN_DIR.format(**identity)
    files = {"weights_path": str(run_dir / "weights.npz"), "run_path": str(run_dir / "run.json")}
    train_job({**SETTINGS, "seed": seed}, identity=identity, threads=1, log=LOG, **files)
    return {"identity": identity, **files, "output": str(run_dir / "metrics.parquet")}


def evaluate(files: dict, sets: dict[str, str]) -> None:
    evaluate_job(EVAL, test_set_paths=sets, log=LOG, **files)


def refused(path: str, problem: str, rule: str):
    message = f"{path} is damaged: {problem}. It is made by rule {rule}"
    return pytest.raises(DamagedFile, match=re.escape(message) + r"[\s\S]*--forcerun " + re.escape(path))


def test_the_separated_set_copied_over_the_uniform_one_is_refused(tmp_path):
    sets, seed0 = make_sets(tmp_path), run(tmp_path, 0)
    evaluate(seed0, sets)  # the files as the jobs wrote them are read
    copy_over(Path(sets["separated"]), Path(sets["uniform"]))
    problem = "it is another file: it says it is of test_set 'separated', delta 0.1, where this job reads the one of "
    with refused(sets["uniform"], problem + "test_set 'uniform', delta None", "test_set_uniform"):
        evaluate(seed0, sets)


def test_a_test_set_of_other_settings_is_refused(tmp_path):
    """A test set of another K has the shapes, and classes in [0, K), of the one expected."""
    sets, seed0, other = make_sets(tmp_path), run(tmp_path, 0), str(tmp_path / "K2.npz")
    datasets.test_set_job("uniform", SIZE, D, N, 2, None, 0, other, LOG)
    copy_over(Path(other), Path(sets["uniform"]))
    problem = "it is another file: it says it is of K 2, where this job reads the one of K 3"
    with refused(sets["uniform"], problem, "test_set_uniform"):
        evaluate(seed0, sets)


def test_seed_1s_weights_on_seed_0s_path_are_refused(tmp_path):
    sets, seed0, seed1 = make_sets(tmp_path), run(tmp_path, 0), run(tmp_path, 1)
    copy_over(Path(seed1["weights_path"]), Path(seed0["weights_path"]))
    problem = "it is another file: it says it is of seed 1, where this job reads the one of seed 0"
    with refused(seed0["weights_path"], problem, "train"):
        evaluate(seed0, sets)
    assert not Path(seed0["output"]).exists()


def test_the_weights_say_their_run_and_settings(tmp_path):
    said = load_arrays(run(tmp_path, 0)["weights_path"])["identity"]
    assert said.dtype.kind == "U" and said.shape == ()  # a text, no pickle
    assert str(said).startswith('{"K": 3, "N": 6, "batch": ') and '"experiment": "convergence"' in str(said)
    assert '"seed": 0' in str(said) and '"variant": "N=6"' in str(said)


def test_a_binary_training_set_of_other_labels_is_refused(tmp_path):
    where = {"test_set": "train", "d": 3, "N": 4, "size": 20}
    gaussian, rademacher = (
        str(tmp_path / paths.BINARY_SET.format(**where, labels=labels)) for labels in ("gaussian", "rademacher")
    )
    for path, labels in ((gaussian, "gaussian"), (rademacher, "rademacher")):
        datasets.binary_set_job("train", 20, 3, 4, labels, None, 0, path, LOG)
    copy_over(Path(rademacher), Path(gaussian))
    settings = {"d": 3, "N": 4, "labels": "gaussian", "train_size": 20}
    problem = (
        "it is another file: it says it is of labels 'rademacher', where this job reads the one of labels 'gaussian'"
    )
    with refused(gaussian, problem, "binary_set"):
        binary_train_job(settings, identity={}, train_path=gaussian, weights_path="", run_path="", threads=1, log=LOG)


def test_an_identity_that_is_no_json_object_is_refused(tmp_path):
    path = tmp_path / "set.npz"
    save_arrays(
        path,
        identity=np.array("[1, 2]"),
        x=np.zeros((SIZE, N + 1, D)),
        classes=np.zeros((SIZE, N), int),
        nn=np.zeros(SIZE, int),
    )
    with pytest.raises(DamagedFile, match="array 'identity' does not say what the file is \\(a JSON object\\)"):
        load_prompt_set(path, SET_ARRAYS, n=SIZE, N=N, d=D, K=K)


def test_a_missing_array_names_the_data_arrays_alone(tmp_path):
    """The identity is no data array: a set without ``nn`` lists what it holds as before."""
    path = str(tmp_path / paths.UNIFORM_SET.format(d=D, N=N, K=K, size=SIZE))
    datasets.test_set_job("uniform", SIZE, D, N, K, None, 0, path, LOG)
    np.savez(path, **{k: v for k, v in load_arrays(path).items() if k != "nn"})
    problem = "the array 'nn' is missing (it holds 'x', 'classes'; expected 'x', 'classes', 'nn')"
    with refused(path, problem, "test_set_uniform"):
        load_prompt_set(path, SET_ARRAYS, n=SIZE, N=N, d=D, K=K)


READ_WITHOUT_CHECKSUM = """
import sys
from onenn.jobs.inputs import load_prompt_set
from onenn.jobs.logs import job_log
from onenn.maths.prompts import SET_ARRAYS
with job_log(sys.argv[2]):
    load_prompt_set(sys.argv[1], SET_ARRAYS, n=16, N=6, d=4, K=3)
"""


def test_a_missing_checksum_is_warned_about_on_stderr_and_in_the_log(tmp_path):
    path, log = tmp_path / "set.npz", tmp_path / "job.log"
    datasets.test_set_job("uniform", SIZE, D, N, K, None, 0, str(path), LOG)
    checksum_path(path).unlink()
    done = subprocess.run(
        [sys.executable, "-c", READ_WITHOUT_CHECKSUM, str(path), str(log)], capture_output=True, text=True, check=True
    )
    warning = f"{path} has no checksum beside it (set.npz.sha256 missing or empty): read without checking"
    assert warning in done.stderr  # where Snakemake shows it
    assert warning in log.read_text()
