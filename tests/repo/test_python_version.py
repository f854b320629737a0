"""One Python: ``requires-python`` of pyproject.toml is the version the lock is resolved for (``--python-version``
of its header), and the README's set-up names that version; the interpreter running the tests satisfies it."""

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def lock_python() -> str:
    header = (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()[1]
    found = re.search(r"--python-version (\d+\.\d+)", header)
    assert found, f"the lock's command names no --python-version: {header}"
    return found[1]


def test_pyproject_requires_the_python_the_lock_is_made_for():
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    assert requires == f">={lock_python()}", (
        f"pyproject.toml requires-python {requires!r}, but requirements.lock is resolved for Python {lock_python()}"
    )


def test_the_readme_names_that_python_and_no_other():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\bPython (3\.\d+)(?![.\d])", readme))
    assert lock_python() in named and named <= {lock_python()}, f"the README names Python {sorted(named)}"


def test_this_interpreter_satisfies_it():
    assert sys.version_info[:2] >= tuple(map(int, lock_python().split(".")))
