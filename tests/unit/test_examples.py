"""The examples run: examples/quickstart.ipynb, its code cells in order in one namespace (no notebook runner: the
.ipynb is JSON), and examples/d_sweep.py at a tiny scale, each in a temporary folder with matplotlib's Agg backend."""

import json
import os
import subprocess
import sys

import matplotlib

from tests.configs import ROOT

NOTEBOOK = ROOT / "examples/quickstart.ipynb"


def code_cells(path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def test_the_notebook_is_committed_without_outputs():
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    code = [cell for cell in cells if cell["cell_type"] == "code"]
    assert code and all(cell["outputs"] == [] and cell["execution_count"] is None for cell in code)


def test_the_quickstart_notebook_runs(tmp_path, monkeypatch):
    """Every code cell, in order, in one namespace; the figure and the tables it writes are there after."""
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    for i, source in enumerate(code_cells(NOTEBOOK)):
        # the cell's name in a traceback: quickstart.ipynb[code cell i]
        exec(compile(source, f"{NOTEBOOK.name}[code cell {i}]", "exec"), namespace)  # noqa: S102 (the notebook's own code)
    import matplotlib.pyplot as plt

    plt.close("all")
    assert (tmp_path / "convergence.png").stat().st_size > 0
    loaded = namespace["loaded"]
    assert list(loaded.tables) == ["convergence"] and len(loaded.runs) == 4 and loaded.scorecard is None
    assert set(loaded.tables["convergence"]["N"]) == {4, 8}


def test_the_d_sweep_example_runs(tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples/d_sweep.py"), "--tiny"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "d_sweep.png").stat().st_size > 0
    assert [line.split()[0] for line in out.stdout.splitlines()[2:]] == ["2", "4", "8", "16"]
