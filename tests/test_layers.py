"""The layering of the package: the workflow's layer never imports torch, so the Snakefile and the jobs that do
not train start without paying for it (docs/architecture.md)."""

import functools
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from onenn.pipeline.startup import KINDS, job_imports

ROOT = Path(__file__).resolve().parents[1]


def test_pipeline_and_what_the_snakefile_imports_do_not_import_torch_or_pandas():
    code = (
        "import sys\n"
        "import onenn.pipeline, onenn.pipeline.experiments, onenn.pipeline.validate, onenn.pipeline.resources\n"
        "import onenn.pipeline.settings, onenn.pipeline.io, onenn.pipeline.logs, onenn.pipeline.provenance\n"
        "import onenn.pipeline.jobs, onenn.pipeline.inputs, onenn.pipeline.paths, onenn.pipeline.startup\n"
        "print('torch' in sys.modules, 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False", out.stderr


def test_the_snakefile_imports_only_the_pipeline_layer():
    sources = [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]
    imports = [
        line.strip()
        for path in sources
        for line in path.read_text().splitlines()
        if line.strip().startswith(("from onenn", "import onenn"))
    ]
    assert imports, "the Snakefile imports nothing from onenn?"
    assert all(line.split()[1].startswith("onenn.pipeline") for line in imports), imports


# --- each job pays only for what it uses (docs/performance.md, per-job fixed cost) ----------------------------

#: the jobs that train, the only ones that may import torch and numba (the engine's compiled kernels)
TRAINING_JOBS = {"train_job", "binary_train_job", "use_threads"}
#: the only job that draws, and so may import matplotlib and seaborn
DRAWING_JOBS = {"figure_job"}
#: jobs that neither read nor write a table, and so must not import pandas
NO_TABLE_JOBS = {"test_set_job", "binary_set_job", "report_page_job"}
#: every function of onenn/pipeline/jobs.py -> the modules it imports when it runs
JOB_IMPORTS = job_imports()


@functools.cache
def loaded_after_importing(modules: tuple[str, ...]) -> set[str]:
    """The heavy packages a fresh interpreter holds after the workflow script's imports and ``modules``."""
    code = (
        "import sys, json\n"
        "import onenn.pipeline.jobs, onenn.pipeline.logs\n"
        + "".join(f"import {m}\n" for m in modules)
        + "print(json.dumps(sorted({'torch', 'numba', 'pandas', 'matplotlib', 'seaborn'} & set(sys.modules))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def test_the_jobs_are_found():
    jobs = JOB_IMPORTS
    assert {"evaluate_job", "binary_evaluate_job", "table_job", "figure_job", "summary_job", "claims_job"} <= set(jobs)
    assert "onenn.analysis.evaluate" in jobs["evaluate_job"] and "torch" in jobs["use_threads"]
    assert {name for functions in KINDS.values() for name in functions} <= set(jobs)  # the benchmark's kinds


@pytest.mark.parametrize("job", sorted(set(JOB_IMPORTS) - TRAINING_JOBS))
def test_a_job_that_does_not_train_does_not_import_torch(job):
    loaded = loaded_after_importing(tuple(JOB_IMPORTS[job]))
    assert not loaded & {"torch", "numba"}
    if job not in DRAWING_JOBS:
        assert not loaded & {"matplotlib", "seaborn"}
    if job in NO_TABLE_JOBS:
        assert "pandas" not in loaded


EVALUATE_BOTH = """
import logging, sys
from onenn.pipeline.jobs import binary_evaluate_job, evaluate_job
folder = sys.argv[1]
log = logging.getLogger("evaluate")
identity = {"experiment": "e", "variant": "v", "seed": "0"}
evaluate_job({"K": 3, "loss": "cross_entropy", "c": 0.0, "delta": 0.1, "test_size": 32}, identity=identity,
             weights_path=f"{folder}/weights.npz", run_path=f"{folder}/run.json",
             test_set_paths={"uniform": f"{folder}/uniform.npz", "separated": f"{folder}/separated.npz"},
             output=f"{folder}/metrics.parquet", log=log)
binary_evaluate_job({**BINARY, "delta": 0.1, "test_size": 32}, identity=identity,
                    weights_path=f"{folder}/binary/weights.npz", run_path=f"{folder}/binary/run.json",
                    set_paths={name: f"{folder}/binary/{name}.npz" for name in ("train", "uniform", "separated")},
                    output=f"{folder}/binary/metrics.parquet", log=log)
print("torch" in sys.modules)
"""


def test_the_evaluation_jobs_run_without_torch(tmp_path):
    """Both evaluation jobs, run for real in a fresh interpreter, on runs trained here."""
    from onenn.pipeline.io import save_arrays
    from onenn.pipeline.jobs import binary_train_job, train_job
    from onenn.prompts import make_binary_set, make_test_set
    from onenn.training.binary import BinarySettings
    from onenn.training.train import TrainSettings

    log = logging.getLogger("test")
    identity = {"experiment": "e", "variant": "v", "seed": "0"}
    s = TrainSettings(steps=5, n_eval=3, device="cpu", loss="cross_entropy")
    train_job(s.to_dict(), identity=identity, weights_path=str(tmp_path / "weights.npz"),
              run_path=str(tmp_path / "run.json"), threads=1, log=log)  # fmt: skip
    for name, delta in (("uniform", None), ("separated", 0.1)):
        save_arrays(tmp_path / f"{name}.npz", **make_test_set(name, 32, s.d, s.N, s.K, delta, 0))
    b = BinarySettings(d=3, N=4, epochs=1, batch=8, train_size=16, n_eval=2)
    (tmp_path / "binary").mkdir()
    for name, size, delta in (("train", 16, None), ("uniform", 32, None), ("separated", 32, 0.1)):
        save_arrays(tmp_path / f"binary/{name}.npz", **make_binary_set(name, size, b.d, b.N, b.labels, delta, 0))
    binary_train_job(b.to_dict(), identity=identity, train_path=str(tmp_path / "binary/train.npz"),
                     weights_path=str(tmp_path / "binary/weights.npz"), run_path=str(tmp_path / "binary/run.json"),
                     threads=1, log=log)  # fmt: skip
    code = f"BINARY = {b.to_dict()!r}\n" + EVALUATE_BOTH
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "False"
    assert (tmp_path / "metrics.parquet").exists() and (tmp_path / "binary/metrics.parquet").exists()
