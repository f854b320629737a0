"""No test module imports another, nor a conftest: what tests share lives in helper modules (tests/helpers.py,
tests/configs.py, ...) and fixtures in conftest.py. Importing a test module runs it a second time under another
name and collects its tests into the importer."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def module_name(path: Path, root: Path) -> str:
    """``tests/workflow/test_x.py`` -> ``tests.workflow.test_x`` (``root``: the folder that holds ``tests``)."""
    return ".".join(path.relative_to(root).with_suffix("").parts)


def is_test_module(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def imported(tree: ast.Module, package: str) -> set[str]:
    """Every module an import statement of ``tree`` may name, relative imports resolved against ``package``: for
    ``from M import n``, both ``M`` and ``M.n`` (``n`` may be a module)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = ".".join(p for p in (base if node.level else "", node.module or "") if p)
            out |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return out


def imports_of_test_modules(root: Path) -> list[str]:
    """``importer imports test module`` for every module under ``root/tests`` that imports a test module or a
    conftest found there."""
    files = sorted((root / "tests").rglob("*.py"))
    tests = {module_name(f, root) for f in files if is_test_module(module_name(f, root))}
    found = []
    for f in files:
        name = module_name(f, root)
        package = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        for target in sorted(imported(ast.parse(f.read_text(), str(f)), package) & tests):
            found.append(f"{f.relative_to(root)} imports {target}")
    return found


def test_no_imports_of_test_modules_another():
    assert imports_of_test_modules(ROOT) == []


def test_the_check_finds_every_spelling_of_such_an_import(tmp_path):
    (tmp_path / "tests/workflow").mkdir(parents=True)
    sources = {
        "tests/__init__.py": "",
        "tests/helpers.py": "import numpy\n",
        "tests/test_a.py": "from tests.helpers import x\nfrom tests.test_b import y\n",
        "tests/test_b.py": "from . import test_a\nimport tests.conftest\n",
        "tests/conftest.py": "",
        "tests/workflow/__init__.py": "",
        "tests/workflow/test_c.py": "from ..test_a import z\nfrom tests.workflow import helpers\n",
        "tests/workflow/helpers.py": "from .. import test_b\n",
    }
    for path, text in sources.items():
        (tmp_path / path).write_text(text)
    assert imports_of_test_modules(tmp_path) == [
        "tests/test_a.py imports tests.test_b",
        "tests/test_b.py imports tests.conftest",
        "tests/test_b.py imports tests.test_a",
        "tests/workflow/helpers.py imports tests.test_b",
        "tests/workflow/test_c.py imports tests.test_a",
    ]
