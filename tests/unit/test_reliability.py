"""Divergence, determinism, device errors and atomic outputs."""

import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from onenn.base.io import load_arrays, load_json, save_arrays, save_json, write_with
from onenn.jobs.evaluate import evaluate_job
from onenn.jobs.train import train_job
from onenn.maths.prompts import make_test_set
from onenn.training.train import Diverged, TrainSettings, find_divergence, train
from tests.helpers import HUGE_LR

ROOT = Path(__file__).resolve().parents[2]
LOG = logging.getLogger("test")
IDENTITY = {"experiment": "blowup", "variant": "lr=1e+39", "seed": "0"}


# --- divergence -------------------------------------------------------------------------------------------


def test_find_divergence_names_the_first_bad_step_and_the_last_finite_values():
    steps = np.array([0, 1, 2, 4, 8])
    W = np.zeros((5, 3, 3))
    W[:, 0, 0] = [1.0, 2.0, 3.0, np.inf, np.nan]
    losses = np.array([1.0, 0.9, 0.8, 0.7, np.nan, np.nan, np.inf, 1.0])
    d = find_divergence(W, losses, steps)
    assert (d.step, d.last_loss_step, d.last_loss, d.last_saved_step, d.last_saved_max) == (4, 3, 0.7, 2, 3.0)
    assert find_divergence(W[:3], losses[:4], steps[:3]) is None
    W[3, 0, 0] = np.nan  # a non-finite saved W before the first non-finite loss
    assert find_divergence(W, np.ones(8), steps).step == 4
    assert find_divergence(W, np.r_[np.ones(3), np.nan, np.ones(4)], steps).step == 3


def test_a_huge_learning_rate_stops_the_run_with_a_clear_error(tmp_path):
    settings = TrainSettings(lr=HUGE_LR, steps=50, n_eval=5, device="cpu", seed=0).to_dict()
    paths = {"weights_path": str(tmp_path / "weights.npz"), "run_path": str(tmp_path / "run.json")}
    with pytest.raises(Diverged) as err:
        train_job(settings, identity=IDENTITY, threads=1, log=LOG, **paths)
    message = str(err.value)
    assert message.startswith("experiment blowup, variant lr=1e+39, seed 0: training diverged: ")
    assert "non-finite minibatch loss or weights at step 1;" in message
    first_loss = train(TrainSettings(**{**settings, "on_divergence": "record"}))["minibatch_loss"][0]
    assert f"last finite minibatch loss {first_loss:.6g} at step 0" in message
    assert "last finite saved W at step 0 (max |W_ij| = 3)" in message  # W0 = diag(0, -sigma), sigma = 3
    assert "on_divergence: record" in message
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_record_keeps_the_steps_before_the_divergence_and_marks_the_rows(tmp_path):
    settings = TrainSettings(lr=HUGE_LR, steps=50, n_eval=5, device="cpu", on_divergence="record", K=3, N=4)
    run, weights = tmp_path / "run.json", tmp_path / "weights.npz"
    train_job(settings.to_dict(), identity=IDENTITY, weights_path=str(weights), run_path=str(run), threads=1, log=LOG)
    w = load_arrays(weights)
    assert w["saved_steps"].tolist() == [0] and np.isfinite(w["W"]).all() and len(w["minibatch_loss"]) == 1
    record = load_json(run)
    assert record["diverged"] is True and record["diverged_step"] == 1
    table = evaluate_small(tmp_path, settings, weights, run)
    assert table["diverged"].all() and (table["diverged_step"] == 1).all() and table["step"].eq(0).all()
    assert table[["accuracy", "test_loss", "minibatch_loss"]].notna().all().all()


def evaluate_small(tmp_path: Path, s: TrainSettings, weights: Path, run: Path) -> pd.DataFrame:
    paths = {}
    for test_set, delta in (("uniform", None), ("separated", 0.1)):
        paths[test_set] = str(tmp_path / f"{test_set}.npz")
        save_arrays(paths[test_set], **make_test_set(test_set, 64, s.d, s.N, s.K, delta, 7))
    out = tmp_path / "metrics.parquet"
    evaluate_job(
        {"K": s.K, "loss": s.loss, "c": s.c, "delta": 0.1, "test_size": 64},
        identity=IDENTITY,
        weights_path=str(weights),
        run_path=str(run),
        test_set_paths=paths,
        output=str(out),
        log=LOG,
    )
    return pd.read_parquet(out)


def test_a_run_that_does_not_diverge_is_marked_so(tmp_path):
    s = TrainSettings(steps=20, n_eval=3, device="cpu", on_divergence="record")
    train_job(
        s.to_dict(),
        identity=IDENTITY,
        weights_path=str(tmp_path / "w.npz"),
        run_path=str(tmp_path / "r.json"),
        threads=1,
        log=LOG,
    )
    record = load_json(tmp_path / "r.json")
    assert record["diverged"] is False and record["diverged_step"] == -1
    assert load_arrays(tmp_path / "w.npz")["saved_steps"][-1] == 20


# --- device -----------------------------------------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_fails_before_training_with_a_clear_message(tmp_path):
    s = TrainSettings(steps=5, n_eval=2, device="cuda").to_dict()
    with pytest.raises(RuntimeError, match=r"device: cuda was requested but CUDA is not available .*use device: auto"):
        train_job(
            s,
            identity=IDENTITY,
            weights_path=str(tmp_path / "w.npz"),
            run_path=str(tmp_path / "r.json"),
            threads=1,
            log=LOG,
        )
    assert list(tmp_path.iterdir()) == []


def test_auto_records_the_device_used_in_the_table(tmp_path):
    s = TrainSettings(steps=5, n_eval=2, device="auto", N=4)
    run, weights = tmp_path / "run.json", tmp_path / "weights.npz"
    train_job(s.to_dict(), identity=IDENTITY, weights_path=str(weights), run_path=str(run), threads=1, log=LOG)
    table = evaluate_small(tmp_path, s, weights, run)
    expected = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert (table["device"] == "auto").all() and table["device_used"].str.startswith(expected).all()


# --- determinism ------------------------------------------------------------------------------------------

DETERMINISM_SCRIPT = textwrap.dedent("""
    import logging, sys
    import torch
    from onenn.base.io import save_arrays
    from onenn.jobs.evaluate import evaluate_job
    from onenn.jobs.train import train_job
    from onenn.maths.prompts import make_test_set
    from onenn.training.train import TrainSettings

    out, seed, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    log = logging.getLogger("determinism")
    s = TrainSettings(steps=100, n_eval=4, device="auto", seed=seed)  # the defaults: d=8, N=16, K=3, batch 128
    identity = {"experiment": "det", "variant": "default", "seed": str(seed)}
    train_job(s.to_dict(), identity=identity,
              weights_path=f"{out}/weights.npz", run_path=f"{out}/run.json", threads=threads, log=log)
    torch.set_num_threads(threads)
    paths = {}
    for test_set, delta in (("uniform", None), ("separated", 0.1)):
        paths[test_set] = f"{out}/{test_set}.npz"
        test_size = 33_000  # means over more than 32768 values, which torch would split across threads
        save_arrays(paths[test_set], **make_test_set(test_set, test_size, s.d, s.N, s.K, delta, 11))
    evaluate_job({"K": s.K, "loss": s.loss, "c": s.c, "delta": 0.1, "test_size": test_size}, identity=identity,
                 weights_path=f"{out}/weights.npz", run_path=f"{out}/run.json", test_set_paths=paths,
                 output=f"{out}/metrics.parquet", log=log)
""")


@pytest.fixture(scope="module")
def determinism_runs(tmp_path_factory) -> dict[tuple[int, int], Path]:
    """(seed, threads) -> the folder of a run made in its own process."""
    base = tmp_path_factory.mktemp("determinism")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    runs = {}
    for seed, threads in ((0, 1), (0, 2), (1, 1)):
        out = base / f"seed{seed}-threads{threads}"
        out.mkdir()
        done = subprocess.run(
            [sys.executable, "-c", DETERMINISM_SCRIPT, str(out), str(seed), str(threads)],
            check=False,
            capture_output=True,
            text=True,
            env={**env, "OMP_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads)},  # as Snakemake sets
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        runs[seed, threads] = out
    return runs


def test_same_seed_gives_bit_identical_weights_and_tables_across_processes_and_threads(determinism_runs):
    a, b = determinism_runs[0, 1], determinism_runs[0, 2]
    wa, wb = load_arrays(a / "weights.npz"), load_arrays(b / "weights.npz")
    for key in ("saved_steps", "W", "minibatch_loss"):
        assert wa[key].tobytes() == wb[key].tobytes(), key
    ta, tb = pd.read_parquet(a / "metrics.parquet"), pd.read_parquet(b / "metrics.parquet")
    pd.testing.assert_frame_equal(ta, tb, check_exact=True)
    numeric = ta.select_dtypes("number").columns
    assert ta[numeric].to_numpy().tobytes() == tb[numeric].to_numpy().tobytes()


def test_different_seeds_give_different_runs(determinism_runs):
    a, c = determinism_runs[0, 1], determinism_runs[1, 1]
    wa, wc = load_arrays(a / "weights.npz"), load_arrays(c / "weights.npz")
    assert np.array_equal(wa["W"][0], wc["W"][0])  # the same W0 (epsilon = 0) ...
    assert not np.array_equal(wa["W"][1:], wc["W"][1:])  # ... then different minibatches
    assert not np.array_equal(wa["minibatch_loss"], wc["minibatch_loss"])
    ta, tc = pd.read_parquet(a / "metrics.parquet"), pd.read_parquet(c / "metrics.parquet")
    last = ta["step"] == ta["step"].max()
    assert not np.array_equal(ta.loc[last, "test_loss"].to_numpy(), tc.loc[last, "test_loss"].to_numpy())


# --- atomic outputs ---------------------------------------------------------------------------------------


def test_a_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "out" / "table.parquet"

    def fail(tmp: Path) -> None:
        tmp.write_bytes(b"half a table")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_with(target, fail)
    assert list(target.parent.iterdir()) == []


def test_a_killed_writer_leaves_no_file_that_looks_complete(tmp_path):
    """The writer is killed while it holds a half-written temporary file: it says so on its standard output and
    then waits, so the kill lands at that point however slow the machine."""
    target = tmp_path / "weights.npz"
    script = textwrap.dedent(f"""
        import threading
        from onenn.base.io import write_with
        def half_written(tmp):
            tmp.write_bytes(b"PK partial")
            print("written", flush=True)
            threading.Event().wait()  # until killed
        write_with({str(target)!r}, half_written)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "written\n", "the writer ended before it wrote"
        assert list(tmp_path.glob(".weights.npz.*.tmp.npz"))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
    assert not target.exists()
    assert all(p.name.startswith(".") for p in tmp_path.iterdir())  # only the hidden temporary file


def test_outputs_are_readable_like_any_file(tmp_path):
    old = os.umask(0o022)
    try:
        save_json(tmp_path / "run.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "run.json").stat().st_mode & 0o777 == 0o644


def test_arrays_are_stored_without_pickle(tmp_path):
    with pytest.raises(TypeError, match="cannot be stored without pickle"):
        save_arrays(tmp_path / "a.npz", a=np.array([{"x": 1}], dtype=object))
    np.savez(tmp_path / "pickled.npz", a=np.array([{"x": 1}], dtype=object))  # what a careless writer makes
    with pytest.raises(ValueError, match="allow_pickle"):
        load_arrays(tmp_path / "pickled.npz")


WRITE_CALL = re.compile(
    r"\.to_parquet\(|\.to_csv\(|np\.save|\.savefig\(|\.write_text\(|\.write_bytes\(|json\.dump\("
    r"|torch\.save|pickle|open\([^)]*['\"][wa]b?['\"]"
)


def test_every_writer_goes_through_onenn_io():
    """Tables, arrays, records and figures are written only by ``onenn.base.io`` (atomically), or by a callback
    that ``onenn.base.io.write_with`` hands a temporary path. A log streamed as it is written says so."""
    offenders = []
    for path in [*ROOT.glob("onenn/**/*.py"), *ROOT.glob("workflow/scripts/*.py")]:
        if path.name == "io.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if (
                WRITE_CALL.search(line)
                and "write_with(" not in line
                and not line.endswith("# a log, streamed: not an output")
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == [], "write outputs with onenn.base.io (save_arrays, save_json, save_table, write_with)"
