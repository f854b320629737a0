"""Which software produced a result: a fingerprint of the onenn code a job runs (the rules' ``params``: Snakemake reruns
a job whose code changed, docs/guide.md), its git commit, the versions (no torch import), the GPU, the machine."""

import ast
import contextlib
import functools
import hashlib
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

#: the package whose modules are followed; imports of anything else (numpy, torch) are not
PACKAGE = "onenn"
SOURCE_ROOT = Path(__file__).resolve().parents[2]
#: hex digits of a fingerprint
DIGITS = 12


def module_file(module: str, root: Path = SOURCE_ROOT) -> Path | None:
    """The source file of the onenn module or package ``module`` under ``root``; ``None`` for anything else."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts)
    return next((path for path in (base / "__init__.py", base.with_suffix(".py")) if path.is_file()), None)


@functools.cache
def _parsed(path: Path, mtime_ns: int, size: int) -> tuple[ast.Module, str]:
    """The syntax tree of ``path`` and the digest of it without docstrings (cached while the file is unchanged)."""
    text = path.read_text(encoding="utf-8")
    tree, bare = (ast.parse(text, filename=str(path)) for _ in range(2))
    for node in ast.walk(bare):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first.value, "value", None), str):
                node.body = node.body[1:] or [ast.Pass()]
    return tree, hashlib.sha256(ast.dump(bare).encode()).hexdigest()[:DIGITS]


def _source(module: str, root: Path) -> tuple[Path, ast.Module, str]:
    path = module_file(module, root)
    if path is None:
        raise ValueError(f"{module!r} is not a module of {PACKAGE} under {root}")
    stat = path.stat()
    return (path, *_parsed(path, stat.st_mtime_ns, stat.st_size))


def _parents(module: str) -> list[str]:
    """``onenn.training.train`` -> ``onenn``, ``onenn.training``: the packages importing it runs."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def imports(module: str, function: str = "", root: Path = SOURCE_ROOT) -> set[str]:
    """The onenn modules (with their packages) that ``module``'s source imports anywhere in it; with ``function``,
    those running it imports: at the module's import time, in the function and the module's functions it names."""
    path, tree, _ = _source(module, root)
    nodes = list(ast.walk(tree))
    if function:
        defs = {node.name: node for node in tree.body if isinstance(node, FUNCTIONS[:2])}
        if function not in defs:
            raise ValueError(f"{module} has no function {function!r} (its functions: {', '.join(defs)})")
        nodes, todo, seen = [], [(tree, False), (defs[function], True)], {function}
        while todo:  # what runs: the module at import time (not its functions' bodies), the function, those it names
            node, running = todo.pop()
            nodes.append(node)
            todo += [(c, running) for c in ast.iter_child_nodes(node) if running or not isinstance(c, FUNCTIONS)]
            if running and isinstance(node, ast.Name) and node.id in defs and node.id not in seen:
                seen.add(node.id)
                todo.append((defs[node.id], True))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join([*base, *(node.module or "").split(".")]).strip(".")
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)  # `from onenn.x import module`
    found = {name for name in names if module_file(name, root) is not None}
    return found | {parent for name in found for parent in _parents(name)}


def closure(*entries: str, root: Path = SOURCE_ROOT) -> list[str]:
    """The onenn modules that running ``entries`` runs, sorted: each a module (``onenn.jobs.train``) or a function
    of one (``onenn.jobs.tables:scaling_job``, ``imports``), and all they import, transitively."""
    seen: set[str] = set()
    todo: list[str] = []
    for entry in entries:
        module, _, function = entry.partition(":")
        seen.add(module)
        todo += [*_parents(module), *imports(module, function, root)]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(imports(module, root=root) - seen)
    return sorted(seen)


def fingerprints(*entries: str, root: Path = SOURCE_ROOT) -> dict[str, str]:
    """``{module: fingerprint}`` of ``closure(*entries)``: the digest of each one's syntax tree without docstrings."""
    return {m: _source(m, root)[2] for m in closure(*entries, root=root)}


def fingerprint(*entries: str, root: Path = SOURCE_ROOT) -> str:
    """One digest of the code ``entries`` run: of every ``module=fingerprint`` of ``fingerprints``."""
    lines = "\n".join(f"{m}={h}" for m, h in fingerprints(*entries, root=root).items())
    return hashlib.sha256(lines.encode()).hexdigest()[:DIGITS]


def param_name(module: str) -> str:
    """``code_onenn_training_train``: the name of ``module``'s entry in a rule's ``params``."""
    return "code_" + module.replace(".", "_")


#: what every workflow script runs besides its job: the job's log
LOG = "onenn.jobs.logs"


def params(*entries: str) -> dict[str, str]:
    """A rule's ``params`` for the code of ``entries`` and the job log: ``{code_onenn_x: "onenn.x=0123456789ab"}``."""
    return {param_name(m): f"{m}={h}" for m, h in fingerprints(*entries, LOG).items()}


def params_by_kind(
    entries: Sequence[str],
    kind_entries: Callable[[str], Sequence[str]],
    kind_of: Callable[[Any], str],
    kinds: Sequence[str],
) -> dict[str, Callable[[Any], str]]:
    """A rule's ``params`` for kind-dependent job code: per-kind fingerprints of ``entries`` and ``kind_entries(kind)``,
    as functions of the wildcards (``kind_of`` gives their kind)."""
    per_kind = {kind: fingerprints(*entries, *kind_entries(kind), LOG) for kind in kinds}
    modules = sorted({m for found in per_kind.values() for m in found})

    def value(module: str, wildcards: Any) -> str:
        found = per_kind[kind_of(wildcards)]
        return f"{module}={found[module]}" if module in found else ""

    return {param_name(m): functools.partial(value, m) for m in modules}


#: the packages whose versions a result records besides Python's: those that shape a number, and snakemake
PACKAGES = ("torch", "numba", "numpy", "snakemake", "scipy", "pandas", "pyarrow", "seaborn", "triton")
#: the keys of ``versions()``, in order: python, then ``PACKAGES``
KEYS = ("python", *PACKAGES)
#: the value for a package that is not installed
MISSING = "not installed"
#: the keys of ``accelerator()``: the GPU a training run used (its model) and the CUDA version of torch's build
ACCELERATOR_KEYS = ("gpu", "cuda")
#: their value where the process used no GPU
NO_GPU = "none"


def package_version(name: str) -> str:
    """The installed version of distribution ``name`` (``2.13.0+cpu``), or ``MISSING``."""
    try:
        return version(name)
    except PackageNotFoundError:
        return MISSING


def versions() -> dict[str, str]:
    """``{"python": "3.11.7", "torch": ..., "numba": ..., ..., "triton": ...}`` of this interpreter (``KEYS``)."""
    return {"python": platform.python_version(), **{name: package_version(name) for name in PACKAGES}}


def accelerator() -> dict[str, str]:
    """``{"gpu": "NVIDIA H200", "cuda": "12.8"}`` where this process initialised CUDA through torch, else ``NO_GPU``."""
    torch = sys.modules.get("torch")
    with contextlib.suppress(AttributeError, RuntimeError):
        if torch is not None and torch.cuda.is_initialized():
            return {"gpu": torch.cuda.get_device_name(), "cuda": str(torch.version.cuda)}
    return dict.fromkeys(ACCELERATOR_KEYS, NO_GPU)


def gpus_used(values: Iterable[object]) -> str:
    """The distinct GPUs (or CUDA versions) of a set of runs' records, sorted and joined by ``; ``, or ``NO_GPU``."""
    return "; ".join(sorted({str(v) for v in values} - {NO_GPU})) or NO_GPU


def describe(found: dict[str, str]) -> str:
    """``python 3.11.7, torch 2.13.0+cpu, ...`` (``KEYS``), ``, on NVIDIA H200 with CUDA 12.8`` (a GPU), ``, onenn
    code 0123456789ab from git 0123456789ab (modified)`` (``CODE_KEYS``): what of these ``found`` has."""
    text = ", ".join(f"{key} {found[key]}" for key in KEYS if key in found)
    if found.get("gpu", NO_GPU) != NO_GPU:
        text += f", on {found['gpu']} with CUDA {found.get('cuda')}"
    if "code" in found:
        text += f", onenn code {found['code']}" + (f" from {found['code_from']}" if "code_from" in found else "")
    return text


#: the keys of ``code_provenance()``: the fingerprint of the code a job ran, and where that code came from
CODE_KEYS = ("code", "code_from")

#: what the columns of ``versions()``, ``accelerator()`` and ``code_provenance()`` mean, where a table has them
DESCRIPTIONS = {
    "python": "the Python version",
    **{package: f"the installed version of {package} (`{MISSING}` where it is not)" for package in PACKAGES},
    "gpu": f"the GPU model the run trained on, `{NO_GPU}` on the CPU",
    "cuda": f"the CUDA version of torch's build on that GPU, `{NO_GPU}` on the CPU",
    "code": "fingerprint of the onenn code the job ran (onenn.base.provenance)",
    "code_from": "where that code came from: `git <commit>`, `(modified)` if the checkout differed, else the version",
}


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(SOURCE_ROOT), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@functools.cache
def source() -> str:
    """``git 0123456789ab`` (``(modified)``: onenn/, workflow/, Snakefile differ), else ``onenn 0.1.0`` (installed)."""
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        if os.path.realpath(_git("rev-parse", "--show-toplevel")) == os.path.realpath(SOURCE_ROOT):
            commit = _git("rev-parse", "--short=12", "HEAD")
            changed = _git("status", "--porcelain", "--untracked-files=no", "--", "onenn", "workflow", "Snakefile")
            return f"git {commit}" + (" (modified)" if changed else "")
    return f"onenn {package_version('onenn')}"


def code_provenance(*entries: str) -> dict[str, str]:
    """``{"code": fingerprint, "code_from": source()}`` of the code ``entries`` run (``onenn.jobs.train:train_job``)."""
    return {"code": fingerprint(*entries), "code_from": source()}


def config_files(files: Sequence[str | os.PathLike], root: str | os.PathLike) -> str:
    """``config.yaml (sha256 0123456789ab) + workflow/presets/quick.yaml (sha256 ...)``: a run's configuration
    files in the order they apply, each once, relative to ``root`` where they lie inside it."""
    parts = []
    for path in dict.fromkeys(os.path.realpath(f) for f in files):
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]  # of the 64 that sha256sum prints
        shown = os.path.relpath(path, os.path.realpath(root))
        parts.append(f"{path if shown.startswith(os.pardir) else shown} (sha256 {digest})")
    return " + ".join(parts)


def processors() -> str:
    """``AMD EPYC ..., 2 logical CPUs``: the CPU's model (from /proc/cpuinfo where there is one) and count."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError, StopIteration), open("/proc/cpuinfo") as f:
        cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    return f"{cpu}, {os.cpu_count()} logical CPUs"
