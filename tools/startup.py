"""The fixed cost of each kind of job: the CPU time of a fresh interpreter that does only what the job's
``workflow/scripts/*.py`` imports (Snakemake's script preamble, ``onenn.jobs.logs`` and the stage's module of
``onenn/jobs/``, then the modules the job functions import when they run), before any input is read.

``python -m tools.startup`` prints the median of a few interpreters per kind (docs/performance.md,
per-job fixed cost); ``--tree`` compares checkouts side by side, in interleaved repetitions, e.g. this one and
a copy of an older commit (``git archive <commit> | tar -x -C /tmp/old``)::

    python -m tools.startup --tree /tmp/old --tree .
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: what Snakemake's preamble imports before the script runs (``snakemake.script.PythonScript``; besides the
#: standard library's deserialiser, which takes milliseconds)
PREAMBLE = "from snakemake.logging import logger\nfrom snakemake.iocontainers import Snakemake\n"
#: what every workflow script imports besides its stage's module
SCRIPT = "import onenn.jobs.logs\n"
#: job kind (a rule, or a rule's kind) -> the stage module of ``onenn/jobs/`` its script imports, and the
#: functions of that module it calls (a training job on the CPU: ``use_threads``, torch's, only on CUDA)
JOB_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "make_test_set": ("datasets", ("test_set_job",)),
    "binary_set": ("datasets", ("binary_set_job",)),
    "train": ("train", ("train_job",)),
    "binary_train": ("train", ("binary_train_job",)),
    "evaluate": ("evaluate", ("evaluate_job", "load_run")),
    "binary_evaluate": ("evaluate", ("binary_evaluate_job", "load_run")),
    "beyond (audit)": ("beyond", ("beyond_job", "audit_job")),
    "beyond (full_matrix)": ("beyond", ("beyond_job", "full_matrix_job")),
    "table (of runs)": ("tables", ("table_job", "aggregate_job")),
    "table (scaling)": ("tables", ("table_job", "scaling_job")),
    "table (landscape)": ("tables", ("table_job", "landscape_job")),
    "figure": ("figures", ("figure_job",)),
    "summary": ("summary", ("summary_job",)),
    "claims": ("claims", ("claims_job",)),
    "report_page": ("summary", ("report_page_job",)),
}


def function_imports(module_py: Path) -> dict[str, list[str]]:
    """Every function of ``module_py`` -> the modules it imports when it runs (its function-level imports)."""
    tree = ast.parse(Path(module_py).read_text())
    imports = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found = {inner.module for inner in ast.walk(node) if isinstance(inner, ast.ImportFrom) and inner.module}
            found |= {alias.name for inner in ast.walk(node) if isinstance(inner, ast.Import) for alias in inner.names}
            imports[node.name] = sorted(found)
    return imports


def kind_code(tree: Path, stage: str, functions: Sequence[str]) -> str:
    """The Python code of a job kind's imports, as its script does them in checkout ``tree``."""
    imports = function_imports(tree / f"onenn/jobs/{stage}.py")
    modules = sorted({module for name in functions for module in imports.get(name, [])})
    return PREAMBLE + SCRIPT + f"import onenn.jobs.{stage}\n" + "".join(f"import {module}\n" for module in modules)


def cpu_seconds(code: str, tree: Path) -> float:
    """User + system CPU seconds of a fresh interpreter running ``code`` with ``tree`` first on the path."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def measure(trees: Sequence[Path], reps: int) -> dict[str, list[float]]:
    """Job kind -> the median CPU seconds in each of ``trees``, over ``reps`` interleaved repetitions (the
    order of the trees alternates), with the baselines: Python alone, the preamble, and the scripts' imports."""
    codes = {"python alone": "pass\n", "snakemake preamble": PREAMBLE, "+ job log": PREAMBLE + SCRIPT}
    rows = {name: [code] * len(trees) for name, code in codes.items()}
    rows |= {kind: [kind_code(tree, *stage) for tree in trees] for kind, stage in JOB_KINDS.items()}
    times: dict[str, list[list[float]]] = {name: [[] for _ in trees] for name in rows}
    for rep in range(reps):
        indices = list(range(len(trees)))[:: 1 if rep % 2 == 0 else -1]
        for name, per_tree in rows.items():
            for i in indices:
                times[name][i].append(cpu_seconds(per_tree[i], trees[i]))
    return {name: [statistics.median(t) for t in per_tree] for name, per_tree in times.items()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", type=Path, help="a checkout to time (repeatable; default: this)")
    parser.add_argument("--reps", type=int, default=5, help="fresh interpreters per kind and checkout (default 5)")
    args = parser.parse_args(argv)
    trees = [tree.resolve() for tree in args.tree or [ROOT]]
    result = measure(trees, args.reps)
    print(f"median CPU seconds of {args.reps} fresh interpreters per job kind, interleaved")
    print(f"{'job kind':22s}" + "".join(f" {str(tree)[-14:]:>14s}" for tree in trees))
    for name, seconds in result.items():
        print(f"{name:22s}" + "".join(f" {s:14.2f}" for s in seconds))


if __name__ == "__main__":
    main()
