"""The package outside the checkout: its wheel holds the schema the API reads and the PEP 561 marker, and the
guide's first example of the API runs from it in another folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.configs import ROOT


def run(command: list[str], **options) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, **options)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.mark.slow
def test_the_guides_first_example_runs_from_the_wheel_outside_the_checkout(tmp_path):
    source = tmp_path / "source"  # a copy: a build writes build/ and *.egg-info beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source)
    shutil.copytree(ROOT / "onenn", source / "onenn", ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    run([*pip, "wheel", str(source), "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "wheel")])
    (wheel,) = (tmp_path / "wheel").glob("onenn-*.whl")
    run([*pip, "install", "--no-deps", "--target", str(tmp_path / "site"), str(wheel)])
    assert (tmp_path / "site" / "onenn" / "py.typed").is_file()  # PEP 561: type checkers read the hints
    guide = (ROOT / "docs/guide.md").read_text()
    example = next(b for b in re.findall(r"```python\n(.*?)```", guide, re.DOTALL) if "onenn.train(" in b)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = example + "\nprint(onenn.__file__, len(run.saved_steps), onenn.evaluate(result, progress=False).shape)\n"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}  # before the checkout's editable install
    done = run([sys.executable, "-c", script], cwd=elsewhere, env=env)
    where, saved, shape = done.stdout.split(maxsplit=2)
    assert where == str(tmp_path / "site" / "onenn" / "__init__.py") and int(saved) > 2 and shape.startswith("(")
