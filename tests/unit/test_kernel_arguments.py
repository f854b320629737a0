"""A wrong call of a compiled kernel's entry point, or of the fused engine, raises an error naming the argument
before any compiled code runs, instead of reading or writing past a buffer (a segmentation fault). The calls run in
a child process: were a check missing, the crash would fail this test, not end the test run."""

import subprocess
import sys

from tests.configs import ROOT

CALLS = r"""
import numpy as np
from onenn.training import cpu_steps as k
from onenn.training.train import TrainSettings, make_engine

engine = make_engine(TrainSettings(steps=4, n_eval=2, device="cpu"), "cpu")
S = engine.S
engine.prepare_block(S)
W, H, U, target_class, G, L = arrays = (engine.W, engine.H, engine.U, engine.target_class, engine.G, engine.L)
step = (engine.lr_over_batch, *engine.loss_code, *engine.scratch)

def attempt(label, call):
    try:
        call()
    except ValueError as err:
        print(label, "->", err)
    else:
        print(label, "-> ran")

attempt("past the block", lambda: k.sgd_steps(*arrays, 0, S + 48, *step))
attempt("W too small", lambda: k.sgd_steps(W[:2, :2], H, U, target_class, G, L, 0, 1, *step))
attempt("L too short", lambda: k.sgd_steps(W, H, U, target_class, G, L[:1], 0, 1, *step))
src = engine.source
attempt("fresh past the block", lambda: k.prepare_fresh(H, src.C, U, target_class, S + 1, *src.codes, *src.kernel_scratch))
H_set = np.zeros((8, *H.shape[1:3]), dtype=engine.W.dtype)
U_set = np.zeros((8, U.shape[1]), dtype=engine.W.dtype)
index = np.full(S * H.shape[3], 9, dtype=np.int64)
attempt("index outside the set", lambda: k.gather_block(H_set, U_set, index, H, U, 1))
attempt("a fine call", lambda: k.sgd_steps(*arrays, 0, 1, *step))
"""


def test_wrong_calls_of_the_compiled_kernels_raise_errors_naming_the_argument():
    done = subprocess.run(
        [sys.executable, "-c", CALLS], check=False, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])  # -11: a segmentation fault
    said = dict(line.split(" -> ", 1) for line in done.stdout.splitlines())
    assert said["past the block"].startswith("sgd_steps: first, last must satisfy 0 <= first <= last <= ")
    assert said["W too small"].startswith("sgd_steps: W must be (D, D)")
    assert said["L too short"].startswith("sgd_steps: L must have the block's")
    assert said["fresh past the block"].startswith("prepare_fresh: n must lie in 0..")
    assert said["index outside the set"].startswith("gather_block: index must lie in 0..7 (the set)")
    assert said["a fine call"] == "ran"
