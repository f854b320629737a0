"""Which onenn modules a job runs (its imports, transitively) and a fingerprint of their syntax trees without
docstrings, which the rules pass as ``params`` (``onenn.plan.code``): Snakemake reruns the jobs whose code changed."""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

#: the package whose modules are followed; imports of anything else (numpy, torch) are not
PACKAGE = "onenn"
#: the folder that holds the package
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
        nodes, todo, seen = [tree], [tree], set()
        while todo:  # what runs at import time: not the bodies of functions
            children = [c for c in ast.iter_child_nodes(todo.pop()) if not isinstance(c, FUNCTIONS)]
            nodes += children
            todo += children
        todo = [function]
        while todo:
            if (name := todo.pop()) not in seen:
                seen.add(name)
                inside = list(ast.walk(defs[name]))
                nodes += inside
                todo += [n.id for n in inside if isinstance(n, ast.Name) and n.id in defs]
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
    """``{module: fingerprint}`` of every module of ``closure(*entries)``, sorted by module: the digest of its syntax
    tree without docstrings (``DIGITS`` hex digits)."""
    return {m: _source(m, root)[2] for m in closure(*entries, root=root)}


def fingerprint(*entries: str, root: Path = SOURCE_ROOT) -> str:
    """One digest of the code ``entries`` run: of every ``module=fingerprint`` of ``fingerprints``."""
    lines = "\n".join(f"{m}={h}" for m, h in fingerprints(*entries, root=root).items())
    return hashlib.sha256(lines.encode()).hexdigest()[:DIGITS]


def param_name(module: str) -> str:
    """``code_onenn_training_train``: the name of ``module``'s entry in a rule's ``params``."""
    return "code_" + module.replace(".", "_")
