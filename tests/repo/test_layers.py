"""The package's layers point one way, and each job pays only for what it imports (docs/guide.md#the-package-in-layers).

The layers, bottom to top; a module may import its own part and the layers below, never a layer above nor a
sibling part of its own layer:

    0  the mathematics (onenn/*.py)   |  the foundation (onenn.base)
    1  onenn.training  |  onenn.theory  |  onenn.analysis  |  onenn.plan (what the Snakefile imports)
    2  onenn.jobs (one module per stage; the only code that reads and writes the workflow's files)
    3  onenn.api (onenn from Python without Snakemake: it calls the jobs)

The developer tools (``tools/``) and the tests sit outside: the package imports neither.

Inside a part, no two files import each other, directly or through others: the package's files form no circle.
Every import counts, function-level ones and ``TYPE_CHECKING`` ones too: a circle is two files that each need the
other to be read, whether at import, when a function runs or for a type, and a type-only circle is broken as a
run-time one is, by a third module both import (or by a protocol on the side that is imported).
"""

import ast
import functools
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: part -> its layer (0 at the bottom)
LAYERS = {"maths": 0, "base": 0, "training": 1, "theory": 1, "analysis": 1, "plan": 1, "jobs": 2, "api": 3}
#: the sub-packages of onenn, and its modules, that are parts of their own; every other module of onenn is the
#: mathematics
PACKAGES = {"base", "training", "theory", "analysis", "plan", "jobs", "api"}


def part_of(module: str) -> str | None:
    """The part of onenn a dotted module name belongs to; ``None`` outside onenn (or the package itself)."""
    names = module.split(".")
    if names[0] != "onenn" or len(names) == 1:
        return None
    return names[1] if names[1] in PACKAGES else "maths"


def module_name(path: Path, root: Path) -> str:
    """``onenn.training.train`` for ``root/onenn/training/train.py`` (``onenn.training`` for its ``__init__.py``)."""
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def package_of(path: Path, root: Path) -> str:
    """The package a relative import in ``path`` starts from."""
    module = module_name(path, root)
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def from_module(node: ast.ImportFrom, package: str) -> str:
    """The module of ``from ... import``, a relative one resolved against ``package``."""
    base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
    return ".".join([*base, *(node.module or "").split(".")]).strip(".")


def imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """Every module ``path`` imports, anywhere in it (function-level and ``TYPE_CHECKING`` imports too), with
    its line; relative imports resolved against ``package``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = from_module(node, package)
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names if part_of(module) is None]
    return found


def layer_violations(root: Path) -> list[str]:
    """``file:line: a imports b (why)`` for every import of the package under ``root/onenn`` that points up, to
    a sibling part, or out to the tools or the tests."""
    out = []
    for path in sorted((root / "onenn").rglob("*.py")):
        module, package = module_name(path, root), package_of(path, root)
        here = part_of(module)
        for line, target in imported_modules(path, package):
            where = f"{path.relative_to(root)}:{line}: {module} imports {target}"
            if target.split(".")[0] in ("tools", "tests"):
                out.append(f"{where} (the package never imports the {target.split('.')[0]})")
            there = part_of(target)
            if here is None or there is None or there == here:
                continue
            if LAYERS[there] > LAYERS[here]:
                out.append(f"{where} (layer {LAYERS[there]} {there} is above layer {LAYERS[here]} {here})")
            elif LAYERS[there] == LAYERS[here]:
                out.append(f"{where} ({there} and {here} are siblings in layer {LAYERS[here]})")
    return out


def test_every_import_points_down():
    violations = layer_violations(ROOT)
    assert not violations, "imports against the layer order:\n" + "\n".join(violations)


@pytest.mark.parametrize(
    "planted, why",
    [
        ("onenn/training/x.py:from onenn.jobs.train import train_job", "is above"),
        ("onenn/base/x.py:import onenn.maths.model", "siblings"),
        ("onenn/analysis/x.py:    from onenn.theory import audit", "siblings"),
        ("onenn/maths/model.py:from onenn.plan.experiments import runs", "is above"),
        ("onenn/plan/x.py:from ..training import train", "siblings"),
        ("onenn/jobs/x.py:import tools.bench", "never imports the tools"),
        ("onenn/jobs/x.py:from onenn.api import train", "is above"),
        ("onenn/maths/family.py:    from onenn import api", "is above"),
    ],
)
def test_the_layer_check_finds_a_planted_import(tmp_path, planted, why):
    """The check itself: a tree with one wrong import (a top-level, indented or relative one) is refused, and
    the message names the file, the line and the reason."""
    file, code = planted.split(":", 1)
    path = tmp_path / file
    path.parent.mkdir(parents=True, exist_ok=True)
    inside_a_function = code.startswith(" ")
    path.write_text("import numpy\n" + ("def f():\n" if inside_a_function else "") + code + "\n")
    (found,) = layer_violations(tmp_path)
    assert found.startswith(f"{file}:{3 if inside_a_function else 2}: ") and why in found


# --- no circle between two files ------------------------------------------------------------------------------


def file_of(module: str, root: Path) -> Path | None:
    """The file under ``root`` of the onenn module or package ``module``; ``None`` for anything else (a name
    defined in a module, or a module outside onenn)."""
    if module.split(".")[0] != "onenn":
        return None
    base = root.joinpath(*module.split("."))
    return next((path for path in (base.with_suffix(".py"), base / "__init__.py") if path.is_file()), None)


def imported_files(path: Path, root: Path) -> list[tuple[int, Path]]:
    """The package's files that ``path`` imports, anywhere in it (function-level and ``TYPE_CHECKING`` imports
    too), each with its line: ``from a import b`` imports the file of module ``a.b`` where there is one, else
    ``a``'s (a package's is its ``__init__.py``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = from_module(node, package_of(path, root))
            modules = [f"{module}.{a.name}" if file_of(f"{module}.{a.name}", root) else module for a in node.names]
        else:
            continue
        files = (file_of(module, root) for module in modules)
        found += [(node.lineno, file) for file in files if file is not None and file != path]
    return found


def import_circles(root: Path) -> list[str]:
    """One line for every group of the package's files under ``root/onenn`` that import one another in a circle:
    the files, then each import inside the group, ``file:line imports file``."""
    files = sorted((root / "onenn").rglob("*.py"))
    imports = {path: imported_files(path, root) for path in files}

    def reachable(start: Path) -> set[Path]:
        seen, stack = set(), [start]
        while stack:
            for _, file in imports[stack.pop()]:
                if file not in seen:
                    seen.add(file)
                    stack.append(file)
        return seen

    reach = {path: reachable(path) for path in files}
    out, reported = [], set()
    for path in files:
        circle = sorted(file for file in reach[path] if path in reach[file])  # path itself, where it is on one
        if not circle or path in reported:
            continue
        reported.update(circle)
        name = {file: str(file.relative_to(root)) for file in circle}
        arrows = [f"{name[a]}:{line} imports {name[b]}" for a in circle for line, b in imports[a] if b in name]
        arrows = list(dict.fromkeys(arrows))  # one line of ``from m import a, b`` imports m once
        out.append(f"circle between {', '.join(name.values())}: {'; '.join(arrows)}")
    return out


def test_no_two_files_import_each_other():
    circles = import_circles(ROOT)
    assert not circles, "files that import one another in a circle:\n" + "\n".join(circles)


@pytest.mark.parametrize(
    "planted",
    [
        # two files, at module level
        {"onenn/training/a.py": "from onenn.training.b import f", "onenn/training/b.py": "import onenn.training.a"},
        # one import inside a function, one relative
        {"onenn/training/a.py": "def f():\n    from onenn.training import b", "onenn/training/b.py": "from . import a"},
        # three files, the circle through a package's __init__.py
        {
            "onenn/theory/a.py": "from onenn.theory.b import f",
            "onenn/theory/b.py": "from onenn.theory import g",
            "onenn/theory/__init__.py": "from onenn.theory.a import g",
        },
        # for types alone
        {
            "onenn/base/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from onenn.base.b import B",
            "onenn/base/b.py": "from onenn.base.a import A",
        },
    ],
)
def test_the_circle_check_finds_a_planted_circle(tmp_path, planted):
    """The check itself: a tree whose files import one another in a circle, at module level, inside a function,
    relatively, through three files or for types alone, is refused, and the message names every file of the
    circle and each import in it, with its line; a file that imports another without a way back is not."""
    (tmp_path / "onenn/base").mkdir(parents=True)
    (tmp_path / "onenn/base/apart.py").write_text("import onenn.base.below\nimport numpy\n")
    (tmp_path / "onenn/base/below.py").write_text("x = 1\n")
    for file, code in planted.items():
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file).write_text(code + "\n")
    (found,) = import_circles(tmp_path)
    assert found.startswith("circle between " + ", ".join(sorted(planted)) + ": ")
    for file, code in planted.items():
        assert f"{file}:{code.count(chr(10)) + 1} imports " in found
    assert "apart.py" not in found and "below.py" not in found


def test_importing_onenn_imports_nothing_heavy():
    """``import onenn`` stays light: the API it re-exports (``onenn.api``) is imported on first use."""
    code = "import sys, onenn\nprint(sorted({'numpy', 'torch', 'pandas', 'numba'} & set(sys.modules)))\n"
    code += "onenn.train\nprint('onenn.api' in sys.modules, 'torch' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True False"], out.stderr


def test_plan_and_base_do_not_import_torch_or_pandas():
    """The Snakefile imports the plan: building the plan of a few hundred jobs must not pay torch's start-up, and
    on a cluster it is built on a login node that may have no working CUDA."""
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for part in ("plan", "base")
        for p in (ROOT / "onenn" / part).glob("*.py")
    )
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules)
    code += "print('torch' in sys.modules, 'pandas' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False", out.stderr


def test_the_snakefile_imports_only_the_plan_and_the_foundation():
    sources = [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]
    imports = [
        line.strip()
        for path in sources
        for line in path.read_text().splitlines()
        if line.strip().startswith(("from onenn", "import onenn"))
    ]
    assert imports, "the Snakefile imports nothing from onenn?"
    assert all(line.split()[1].startswith(("onenn.plan", "onenn.base")) for line in imports), imports


# --- each job pays only for what it uses (docs/performance.md, per-job fixed cost) ----------------------------

#: the jobs that train, the only ones that may import torch and numba (the engine's compiled kernels)
TRAINING_JOBS = {"train.train_job", "train.binary_train_job"}
#: the jobs that draw, and so may import matplotlib and seaborn
DRAWING_JOBS = {"figures.figure_job", "readme.lemmas_job"}
#: jobs that neither read nor write a table, and so must not import pandas
NO_TABLE_JOBS = {"datasets.test_set_job", "datasets.binary_set_job", "summary.report_page_job"}


def job_imports() -> dict[str, tuple[str, ...]]:
    """``stage.function`` of every function of ``onenn/jobs/<stage>.py`` -> what a job calling it imports: its
    stage's module and the modules the function imports when it runs."""
    out = {}
    for path in sorted((ROOT / "onenn/jobs").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                inner = imported_modules_of(node)
                out[f"{path.stem}.{node.name}"] = (f"onenn.jobs.{path.stem}", *inner)
    return out


def imported_modules_of(node: ast.AST) -> list[str]:
    found = {n.module for n in ast.walk(node) if isinstance(n, ast.ImportFrom) and n.module}
    found |= {alias.name for n in ast.walk(node) if isinstance(n, ast.Import) for alias in n.names}
    return sorted(found)


JOB_IMPORTS = job_imports()


@functools.cache
def loaded_after_importing(modules: tuple[str, ...]) -> set[str]:
    """The heavy packages a fresh interpreter holds after the workflow script's imports and ``modules``."""
    code = (
        "import sys, json\n"
        "import onenn.jobs.logs\n"
        + "".join(f"import {m}\n" for m in modules)
        + "print(json.dumps(sorted({'torch', 'numba', 'pandas', 'matplotlib', 'seaborn'} & set(sys.modules))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def test_the_jobs_are_found():
    jobs = JOB_IMPORTS
    expected = {"evaluate.evaluate_job", "tables.table_job", "figures.figure_job", "summary.summary_job"}
    assert expected | TRAINING_JOBS | DRAWING_JOBS | NO_TABLE_JOBS <= set(jobs)
    assert "onenn.analysis.evaluate" in jobs["evaluate.evaluate_job"] and "torch" in jobs["train.train_job"]


@pytest.mark.parametrize("job", sorted(set(JOB_IMPORTS) - TRAINING_JOBS))
def test_a_job_that_does_not_train_does_not_import_torch(job):
    loaded = loaded_after_importing(JOB_IMPORTS[job])
    assert not loaded & {"torch", "numba"}
    if job not in DRAWING_JOBS:
        assert not loaded & {"matplotlib", "seaborn"}
    if job in NO_TABLE_JOBS:
        assert "pandas" not in loaded


EVALUATE_BOTH = """
import logging, sys
from onenn.jobs.evaluate import evaluate_job
folder = sys.argv[1]
log = logging.getLogger("evaluate")
identity = {"experiment": "e", "variant": "v", "seed": "0"}
evaluate_job({"K": 3, "loss": "cross_entropy", "c": 0.0, "delta": 0.1, "test_size": 32}, identity=identity,
             weights_path=f"{folder}/weights.npz", run_path=f"{folder}/run.json",
             test_set_paths={"uniform": f"{folder}/uniform.npz", "separated": f"{folder}/separated.npz"},
             output=f"{folder}/metrics.parquet", log=log)
evaluate_job({**BINARY, "delta": 0.1, "test_size": 32}, identity=identity,
             weights_path=f"{folder}/binary/weights.npz", run_path=f"{folder}/binary/run.json",
             test_set_paths={name: f"{folder}/binary/{name}.npz" for name in ("train", "uniform", "separated")},
             output=f"{folder}/binary/metrics.parquet", log=log, kind="binary")
print("torch" in sys.modules)
"""


def test_the_evaluation_jobs_run_without_torch(tmp_path):
    """Both evaluation jobs, run for real in a fresh interpreter, on runs trained here."""
    from onenn.base.io import save_arrays
    from onenn.jobs.train import binary_train_job, train_job
    from onenn.maths.prompts import make_binary_set, make_test_set
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


TRAIN_BOTH = """
import logging, sys
from onenn.jobs.train import binary_train_job, train_job
folder = sys.argv[1]
log = logging.getLogger("train")
identity = {"experiment": "e", "variant": "v", "seed": "0"}
for device in DEVICES:
    train_job({"steps": 20, "n_eval": 3, "device": device, "loss": "cross_entropy", "epsilon": 0.1}, identity=identity,
              weights_path=f"{folder}/{device}/weights.npz", run_path=f"{folder}/{device}/run.json", threads=1, log=log)
binary_train_job(BINARY, identity=identity, train_path=f"{folder}/binary/train.npz",
                 weights_path=f"{folder}/binary/weights.npz", run_path=f"{folder}/binary/run.json", threads=1, log=log)
print(sorted({"torch", "numba"} & set(sys.modules)))
"""


def test_the_cpu_training_jobs_run_without_torch(tmp_path):
    """Both training jobs, on the CPU (``device: cpu``, and ``auto`` where no GPU driver is present), run for real
    in a fresh interpreter: they train on the compiled kernels (numba is loaded) and never import torch."""
    from onenn.base.io import save_arrays
    from onenn.maths.prompts import make_binary_set
    from onenn.training.binary import BinarySettings
    from onenn.training.train import gpu_driver_present

    b = BinarySettings(d=3, N=4, epochs=2, batch=8, train_size=20, n_eval=3)
    for folder in ("cpu", "auto", "binary"):
        (tmp_path / folder).mkdir()
    save_arrays(tmp_path / "binary/train.npz", **make_binary_set("train", 20, b.d, b.N, b.labels, None, 0))
    devices = ("cpu",) if gpu_driver_present() else ("cpu", "auto")  # with a driver, auto asks torch (and may be CUDA)
    code = f"BINARY = {b.to_dict()!r}\nDEVICES = {devices!r}\n" + TRAIN_BOTH
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "['numba']"
    for folder in (*devices, "binary"):
        record = json.loads((tmp_path / folder / "run.json").read_text())
        assert record["torch"] and record.get("device_used", "cpu") == "cpu"  # torch's version, read without it
