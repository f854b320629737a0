"""Damaged intermediate files: each loader of onenn.jobs.inputs refuses a file that does not open, lacks an
array or column, has the wrong shape or type, holds NaN where it must not, belongs to another run or changed
since it was written, with ``DamagedFile`` naming the file, the problem, the rule that makes it and the command
that remakes it. The checksums beside every output; the rule of every path. Synthetic files in tmp_path; the same
cases through Snakemake, with their remedy: tests/workflow/test_damaged_files.py. A full disk: test_full_disk.py."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from onenn.base import paths
from onenn.base.columns import METRICS
from onenn.base.io import (
    DamagedFile,
    checksum_path,
    file_digest,
    load_arrays,
    load_table,
    save_arrays,
    save_json,
    save_table,
    verify_checksum,
)
from onenn.jobs.inputs import (
    NUMBER,
    WEIGHTS_ARRAYS,
    load_checked_table,
    load_prompt_set,
    load_run_record,
    load_weights,
)
from onenn.jobs.logs import job_log
from onenn.maths.prompts import BINARY_SET_ARRAYS, SET_ARRAYS, make_binary_set, make_test_set

ROOT = Path(__file__).resolve().parents[2]
RUN = paths.RUN_DIR.format(experiment="convergence", variant="N=16", seed=0)
IDENTITY = {"experiment": "convergence", "variant": "N=16", "seed": "0"}
SETTINGS = {"K": 3, "loss": "square", "c": 0.0}
D, N, K = 4, 6, 3  # a small run: d=4, N=6, K=3, so W is (S, 8, 8)


def results(tmp_path: Path, pattern: str, **wildcards) -> Path:
    """Where the workflow would put a file, under tmp_path (the loaders see the path the rules give it)."""
    return tmp_path / pattern.format(**wildcards)


def make_run(tmp_path: Path, **record_changes) -> tuple[Path, Path, dict]:
    """A run's weights and record as train_job writes them: steps 0, 5, 10 of a 10-step run."""
    weights, record_path = tmp_path / RUN / "weights.npz", tmp_path / RUN / "run.json"
    rng = np.random.default_rng(0)
    steps = np.array([0, 5, 10])
    save_arrays(
        weights, saved_steps=steps, W=rng.standard_normal((3, D + K + 1, D + K + 1)), minibatch_loss=rng.random(10)
    )
    record = {**IDENTITY, "seed": 0, "d": D, "N": N, "K": K, "loss": "square", "c": 0.0, "steps": 10}
    record |= {"diverged": False, "diverged_step": -1} | record_changes
    save_json(record_path, record)
    return weights, record_path, record


def damage(match: str, path: Path):
    """``DamagedFile`` whose message says ``match`` about ``path``."""
    return pytest.raises(DamagedFile, match=re.escape(f"{path} is damaged: ") + ".*" + match)


# --- the message ----------------------------------------------------------------------------------------------


def test_the_message_names_the_file_the_problem_the_rule_and_the_remedy(tmp_path):
    weights, _, _ = make_run(tmp_path)
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated
    with pytest.raises(DamagedFile) as err:
        load_arrays(weights)
    message = str(err.value)
    assert message.startswith(f"{weights} is damaged: it is not a readable .npz archive (BadZipFile: ")
    assert "It is made by rule train (in a binary experiment: binary_train)" in message
    assert f"snakemake --cores all --forcerun {weights}\n" in message
    assert message.endswith("(with the --configfile's, or the profile, of your run).")
    assert err.value.path == str(weights) and isinstance(err.value, ValueError)


def test_a_file_the_workflow_does_not_make_is_to_be_restored(tmp_path):
    path = tmp_path / "elsewhere.npz"
    path.write_bytes(b"not an archive")
    with pytest.raises(DamagedFile, match="The workflow does not make this file; restore it"):
        load_arrays(path)


@pytest.mark.parametrize(
    ("pattern", "rules"),
    [
        (paths.UNIFORM_SET, ("test_set_uniform",)),
        (paths.SEPARATED_SET, ("test_set_separated",)),
        (paths.BINARY_SET, ("binary_set",)),
        (paths.BINARY_SEPARATED_SET, ("binary_set_separated",)),
        (paths.RUN_WEIGHTS, ("train", "binary_train")),
        (paths.RUN_RECORD, ("train", "binary_train")),
        (paths.RUN_METRICS, ("evaluate", "binary_evaluate")),
        (paths.VARIANT_TABLE, ("beyond",)),
        (paths.TABLE, ("table",)),
        (paths.SUMMARY_TABLE, ("summary",)),
        (paths.CLAIMS_TABLE, ("claims",)),
        (paths.FIGURE_PDF, ("figure",)),
        (paths.README_CLAIMS, ("readme",)),
        (paths.README_FIGURE, ("readme_figure",)),
        (paths.README_LEMMAS_FIGURE, ("audit_lemmas",)),
    ],
)
def test_the_rule_is_read_off_the_path(tmp_path, pattern, rules):
    filled = pattern.format(
        experiment="e", variant="N=16", seed=1, d=8, N=16, K=3, size=64, delta=0.1, test_set="train", labels="gaussian"
    )
    assert paths.rules_making(filled) == rules
    assert paths.rules_making(tmp_path / filled) == rules  # an absolute path too
    assert paths.rules_making("notes/" + Path(filled).name) == ()


def smk_outputs() -> dict[str, set[str]]:
    """Rule -> the names of the paths.py patterns in its ``output:`` section, read off workflow/rules/*.smk."""
    outputs: dict[str, set[str]] = {}
    for smk in sorted((ROOT / "workflow/rules").glob("*.smk")):
        for block in re.split(r"^rule ", smk.read_text(), flags=re.MULTILINE)[1:]:
            name = block.split(":", 1)[0].strip()
            section = re.search(r"^    output:\n(.*?)^    \w+:", block, flags=re.MULTILINE | re.DOTALL)
            outputs[name] = set(re.findall(r"paths\.([A-Z_]+)", section.group(1))) if section else set()
    return outputs


def test_made_by_agrees_with_the_rules_outputs():
    outputs = smk_outputs()
    made = {(getattr(paths, name), rule) for rule, names in outputs.items() for name in names}
    assert made == {(pattern, rule) for pattern, rules in paths.MADE_BY.items() for rule in rules}


# --- checksums ------------------------------------------------------------------------------------------------


def test_every_save_writes_a_checksum_in_sha256sum_format(tmp_path):
    save_arrays(tmp_path / "a.npz", x=np.arange(3))
    save_json(tmp_path / "r.json", {"a": 1})
    save_table(tmp_path / "t.parquet", pd.DataFrame({"x": [1.0]}))
    for name in ("a.npz", "r.json", "t.parquet"):
        sidecar = checksum_path(tmp_path / name)
        assert sidecar.name == name + ".sha256"
        assert sidecar.read_text() == f"{file_digest(tmp_path / name)}  {name}\n"
        assert verify_checksum(tmp_path / name) is True
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary files left


def test_a_rewrite_replaces_a_stale_checksum(tmp_path):
    path = tmp_path / "a.npz"
    save_arrays(path, x=np.arange(3))
    checksum_path(path).write_text("0" * 64 + "  a.npz\n")  # stale: left by an older file
    save_arrays(path, x=np.arange(4))
    assert load_arrays(path)["x"].tolist() == [0, 1, 2, 3]


def test_a_file_without_a_checksum_is_read_unverified_with_a_warning_in_the_jobs_log_naming_it(tmp_path):
    path = tmp_path / "a.npz"
    save_arrays(path, x=np.arange(3))
    checksum_path(path).unlink()  # written before checksums were recorded, or moved without its checksum
    log = tmp_path / "job.log"
    with job_log(str(log)):
        assert verify_checksum(path) is False
        assert load_arrays(path)["x"].tolist() == [0, 1, 2]  # still readable
    warnings = [line for line in log.read_text().splitlines() if " WARNING " in line]
    assert len(warnings) == 2 and all(f"{path} has no checksum beside it (a.npz.sha256" in w for w in warnings)


def test_a_file_with_its_checksum_is_read_without_a_warning(tmp_path):
    path = tmp_path / "a.npz"
    save_arrays(path, x=np.arange(3))
    log = tmp_path / "job.log"
    with job_log(str(log)):
        load_arrays(path)
    assert "WARNING" not in log.read_text()


def test_a_file_changed_after_it_was_written_fails_its_checksum(tmp_path):
    path = results(tmp_path, paths.RUN_METRICS, experiment="e", variant="v", seed=0)
    save_table(path, pd.DataFrame({"x": [1.0, 2.0]}))
    pd.DataFrame({"x": [1.0, 3.0]}).to_parquet(path)  # a valid table, but not the one the job wrote
    with damage(r"its contents changed since its job wrote it \(.* in metrics.parquet.sha256", path):
        load_table(path)
    assert len(load_table(path, verify=False)) == 2


# --- run records ----------------------------------------------------------------------------------------------


def test_a_run_record_is_read_when_it_belongs_to_the_run(tmp_path):
    _, record_path, record = make_run(tmp_path)
    assert load_run_record(record_path, IDENTITY, SETTINGS, needed=("d", "N")) == record
    assert load_run_record(record_path, IDENTITY, {**SETTINGS, "c": 0}) == record  # 0 and 0.0 are one setting


def test_a_run_record_of_another_run_is_refused(tmp_path):
    _, record_path, _ = make_run(tmp_path, variant="N=32", N=32, loss="ce")
    with damage(
        r"it is the record of another run: variant is 'N=32', not 'N=16'; loss is 'ce', not 'square'", record_path
    ):
        load_run_record(record_path, IDENTITY, SETTINGS)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"experiment": "convergence"', r"it is not a readable JSON file \(JSONDecodeError"),
        ("[1, 2]", r"it holds a JSON list, not a run record"),
        ("[" * 10**5 + "]" * 10**5, r"it is not a readable JSON file \(RecursionError"),  # deeper than the stack
        ('{"experiment": "convergence", "variant": "N=16", "seed": 0}', r"the keys 'K', 'loss', 'c', 'd' are missing"),
    ],
)
def test_a_broken_run_record_is_refused(tmp_path, content, problem):
    path = results(tmp_path, paths.RUN_RECORD, experiment="convergence", variant="N=16", seed=0)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with damage(problem, path):
        load_run_record(path, IDENTITY, SETTINGS, needed=("d",))


# --- weights --------------------------------------------------------------------------------------------------


def test_weights_that_fit_their_record_are_read(tmp_path):
    weights, _, record = make_run(tmp_path)
    arrays = load_weights(weights, record, D + K + 1)
    assert tuple(arrays) == WEIGHTS_ARRAYS and arrays["W"].shape == (3, 8, 8)


def test_nan_in_a_saved_w_is_refused(tmp_path):
    weights, _, record = make_run(tmp_path)
    arrays = load_arrays(weights)
    arrays["W"][1, 2, 3] = np.nan
    np.savez(weights, **arrays)  # rewritten behind the workflow's back
    with damage(r"array 'W' holds non-finite values \(NaN or infinite\) in the weights saved at step 5", weights):
        load_weights(weights, record, D + K + 1)


def test_weights_of_another_run_are_refused(tmp_path):
    weights, _, record = make_run(tmp_path)
    with damage(r"array 'W' has shape \(3, 8, 8\), expected \(S, D, D\) = \(3, 9, 9\)", weights):
        load_weights(weights, {**record, "K": 4}, D + 4 + 1)
    with damage(r"it holds 10 steps saved up to step 10, but its run record says the run has 20 steps", weights):
        load_weights(weights, {**record, "steps": 20}, D + K + 1)


def test_the_weights_of_a_run_recorded_as_diverged_end_before_the_divergence(tmp_path):
    weights, _, record = make_run(tmp_path)
    save_arrays(weights, saved_steps=np.array([0, 5]), W=np.zeros((2, 8, 8)), minibatch_loss=np.ones(7))
    assert len(load_weights(weights, {**record, "diverged": True, "diverged_step": 7}, 8)["saved_steps"]) == 2


@pytest.mark.parametrize("missing", WEIGHTS_ARRAYS)
def test_weights_without_an_array_are_refused(tmp_path, missing):
    weights, _, record = make_run(tmp_path)
    save_arrays(weights, **{k: v for k, v in load_arrays(weights).items() if k != missing})
    with damage(f"the array '{missing}' is missing", weights):
        load_weights(weights, record, D + K + 1)


# --- prompt sets ----------------------------------------------------------------------------------------------


def test_the_prompt_makers_write_the_arrays_the_loader_checks():
    assert tuple(make_test_set("uniform", 4, D, N, K, None, 0)) == SET_ARRAYS
    assert tuple(make_test_set("separated", 4, D, N, K, 0.1, 0)) == SET_ARRAYS
    assert tuple(make_binary_set("train", 4, D, N, "gaussian", None, 0)) == BINARY_SET_ARRAYS
    assert tuple(make_binary_set("separated", 4, D, N, "rademacher", 0.1, 0)) == BINARY_SET_ARRAYS


def test_prompt_sets_of_the_run_are_read(tmp_path):
    path = results(tmp_path, paths.SEPARATED_SET, d=D, N=N, K=K, delta=0.1, size=16)
    save_arrays(path, **make_test_set("separated", 16, D, N, K, 0.1, 0))
    assert load_prompt_set(path, SET_ARRAYS, n=16, N=N, d=D, K=K)["x"].shape == (16, N + 1, D)
    binary = results(tmp_path, paths.BINARY_SET, test_set="train", d=D, N=N, labels="gaussian", size=16)
    save_arrays(binary, **make_binary_set("train", 16, D, N, "gaussian", None, 0))
    assert load_prompt_set(binary, BINARY_SET_ARRAYS, n=16, N=N, d=D, K=None)["y"].dtype == np.float64


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda a: a.pop("nn"),
            r"the array 'nn' is missing \(it holds 'x', 'classes'; expected 'x', 'classes', 'nn'\)",
        ),
        (
            lambda a: a.update(x=a["x"][:, :-1]),
            r"array 'x' has shape \(16, 6, 4\), expected \(n, N\+1, d\) = \(16, 7, 4\)",
        ),
        (
            lambda a: a.update(classes=a["classes"] + 3),
            r"array 'classes' has values outside \[0, 3\) \(the classes of K=3\)",
        ),
        (
            lambda a: a.update(classes=a["classes"].astype(float)),
            r"array 'classes' has dtype float64, expected integers",
        ),
        (
            lambda a: a["x"].__setitem__((2, 0, 1), np.inf),
            r"array 'x' holds 1 non-finite values .* at index \(2, 0, 1\)",
        ),
    ],
)
def test_a_damaged_test_set_is_refused(tmp_path, change, problem):
    path = results(tmp_path, paths.UNIFORM_SET, d=D, N=N, K=K, size=16)
    arrays = make_test_set("uniform", 16, D, N, K, None, 0)
    change(arrays)
    save_arrays(path, **arrays)
    with damage(problem, path) as err:
        load_prompt_set(path, SET_ARRAYS, n=16, N=N, d=D, K=K)
    assert "It is made by rule test_set_uniform;" in str(err.value)


def test_a_single_npy_array_is_not_a_prompt_set(tmp_path):
    path = results(tmp_path, paths.UNIFORM_SET, d=D, N=N, K=K, size=16)
    path.parent.mkdir(parents=True)
    with open(path, "wb") as f:
        np.save(f, np.zeros(3))
    with damage("it holds a single .npy array, not an .npz archive", path):
        load_prompt_set(path, SET_ARRAYS, n=16, N=N, d=D, K=K)


# --- tables ---------------------------------------------------------------------------------------------------


def test_a_parquet_that_is_not_parquet_is_refused(tmp_path):
    path = results(tmp_path, paths.TABLE, experiment="convergence")
    path.parent.mkdir(parents=True)
    path.write_text("experiment,variant\nconvergence,N=16\n")  # a CSV by another name
    with damage(r"it is not a readable Parquet file \(ArrowInvalid: ", path) as err:
        load_checked_table(path)
    assert "It is made by rule table;" in str(err.value)


def test_a_table_without_its_columns_is_refused(tmp_path):
    path = results(tmp_path, paths.RUN_METRICS, experiment="e", variant="v", seed=0)
    save_table(path, pd.DataFrame({"experiment": ["e"], "accuracy": ["high"]}))
    columns = dict.fromkeys(METRICS, NUMBER)
    with damage(r"the columns 'logit_error', 'test_loss' are missing \(it has 2 columns: experiment, accuracy\)", path):
        load_checked_table(path, columns)
    save_table(path, pd.DataFrame({"experiment": ["e"]} | {key: ["high"] for key in METRICS}))
    with damage(r"column 'logit_error' has type (object|str), expected numbers", path):
        load_checked_table(path, columns)


# --- in the jobs ----------------------------------------------------------------------------------------------

EVALUATE_DAMAGED = """
import sys
from onenn.jobs.evaluate import evaluate_job
from onenn.jobs.logs import job_log
out, weights, record, uniform, separated = sys.argv[1:]
try:
    with job_log(out + "/job.log") as log:
        evaluate_job({"K": 3, "loss": "square", "c": 0.0, "delta": 0.1, "test_size": 16},
                     identity={"experiment": "convergence", "variant": "N=16", "seed": "0"},
                     weights_path=weights, run_path=record,
                     test_set_paths={"uniform": uniform, "separated": separated},
                     output=out + "/metrics.parquet", log=log)
except Exception as err:
    print(type(err).__name__, "torch" in sys.modules)
"""


def test_a_job_fails_on_a_damaged_input_before_any_compute_and_logs_the_message(tmp_path):
    """evaluate_job with truncated weights: DamagedFile before torch is even imported, the message in the job's
    log, no output."""
    weights, record, _ = make_run(tmp_path)
    sets = []
    for split, delta in (("uniform", None), ("separated", 0.1)):
        sets.append(str(tmp_path / f"{split}.npz"))
        save_arrays(sets[-1], **make_test_set(split, 16, D, N, K, delta, 0))
    weights.write_bytes(weights.read_bytes()[:1000])
    done = subprocess.run(
        [sys.executable, "-c", EVALUATE_DAMAGED, str(tmp_path), str(weights), str(record), *sets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["DamagedFile", "False"], done.stderr
    log = (tmp_path / "job.log").read_text()
    assert f"DamagedFile: {weights} is damaged: it is not a readable .npz archive" in log
    assert not (tmp_path / "metrics.parquet").exists()


def test_job_log_records_the_damage(tmp_path):
    path = tmp_path / "results/tables/e.parquet"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"PAR1 truncated")
    with pytest.raises(DamagedFile), job_log(str(tmp_path / "job.log")):
        load_checked_table(path)
    assert "is damaged: it is not a readable Parquet file" in (tmp_path / "job.log").read_text()
