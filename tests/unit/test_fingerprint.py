"""The code a job runs, found from the import graph, and its fingerprint: comments, docstrings and formatting do not
count, a changed expression does (onenn/base/provenance.py)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from onenn.base import provenance as fp
from onenn.plan import kinds
from tests.configs import ROOT

#: a package of five modules whose imports are known by construction
PACKAGE = {
    "onenn/__init__.py": '"""The package."""\n',
    "onenn/a.py": """
        '''Module a: imports b at the top, sub.c inside one function, d inside another.'''
        import numpy as np
        from onenn import b


        def uses_c():
            from onenn.sub.c import VALUE

            return VALUE


        def calls_uses_c():
            return uses_c() + 1


        def uses_d():
            import onenn.d

            return onenn.d.VALUE
        """,
    "onenn/b.py": "from onenn.sub import c  # a module imported by name from its package\nVALUE = 2\n",
    "onenn/sub/__init__.py": "",
    "onenn/sub/c.py": "VALUE = 1\n",
    "onenn/d.py": "VALUE = 3\n",
    "onenn/e.py": "VALUE = 4\n",
}


@pytest.fixture
def package(tmp_path) -> Path:
    for name, text in PACKAGE.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_the_closure_follows_every_import_of_onenn_and_the_packages_they_run(package):
    assert fp.closure("onenn.a", root=package) == [
        "onenn",
        "onenn.a",
        "onenn.b",
        "onenn.d",
        "onenn.sub",
        "onenn.sub.c",
    ]  # not onenn.e (never imported), not numpy (not onenn)


def test_a_function_entry_follows_only_what_that_function_and_the_functions_it_calls_import(package):
    top = ["onenn", "onenn.a", "onenn.b", "onenn.sub", "onenn.sub.c"]  # b imports sub.c at import time
    assert fp.closure("onenn.a:uses_d", root=package) == sorted([*top, "onenn.d"])
    assert fp.closure("onenn.a:calls_uses_c", root=package) == top
    with pytest.raises(ValueError, match="no function 'missing'.*uses_c"):
        fp.closure("onenn.a:missing", root=package)


def edit(package: Path, name: str, old: str, new: str) -> None:
    path = package / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    "old, new",
    [
        ("import numpy as np", "import numpy as np  # a comment"),
        ("Module a: imports b", "Module a, reworded: imports b"),  # the module's docstring
        ("return VALUE\n", "return (\n        VALUE\n    )\n"),  # formatting
    ],
    ids=["comment", "docstring", "formatting"],
)
def test_comments_docstrings_and_formatting_leave_the_fingerprint(package, old, new):
    before = fp.fingerprints("onenn.a", root=package)
    edit(package, "onenn/a.py", old, new)
    assert fp.fingerprints("onenn.a", root=package) == before


def test_a_changed_expression_changes_that_modules_fingerprint_only(package):
    before = fp.fingerprints("onenn.a", root=package)
    edit(package, "onenn/sub/c.py", "VALUE = 1", "VALUE = 10")
    after = fp.fingerprints("onenn.a", root=package)
    assert {m for m in before if before[m] != after[m]} == {"onenn.sub.c"}


def test_a_function_docstring_is_not_code_but_a_string_statement_after_it_is(package):
    edit(package, "onenn/d.py", "VALUE = 3\n", 'def f():\n    """Doc."""\n    return 1\n')
    before = fp.fingerprints("onenn.d", root=package)["onenn.d"]
    edit(package, "onenn/d.py", '"""Doc."""', '"""Other doc."""')
    assert fp.fingerprints("onenn.d", root=package)["onenn.d"] == before
    edit(package, "onenn/d.py", "    return 1\n", '    "a string that is not the docstring"\n    return 1\n')
    assert fp.fingerprints("onenn.d", root=package)["onenn.d"] != before


def test_the_overall_fingerprint_changes_with_any_module_of_the_closure(package):
    before = fp.fingerprint("onenn.a", root=package)
    edit(package, "onenn/e.py", "VALUE = 4", "VALUE = 5")  # outside the closure
    assert fp.fingerprint("onenn.a", root=package) == before
    edit(package, "onenn/d.py", "VALUE = 3", "VALUE = 5")
    assert fp.fingerprint("onenn.a", root=package) != before


def test_a_name_outside_onenn_is_an_error_naming_it():
    with pytest.raises(ValueError, match="'numpy' is not a module of onenn"):
        fp.closure("numpy")


# --- the rules' code, on the real package --------------------------------------------------------------------


def test_each_computed_table_runs_its_own_theory_module_and_not_the_others():
    scaling = fp.params_by_kind(["onenn.jobs.tables:table_job"], kinds.kind_entries, lambda w: w, tuple(kinds.KINDS))
    landscape_param = fp.param_name("onenn.theory.landscape")
    scaling_param = fp.param_name("onenn.theory.scaling")
    assert scaling[scaling_param]("scaling").startswith("onenn.theory.scaling=")
    assert scaling[scaling_param]("landscape") == ""
    assert scaling[landscape_param]("landscape").startswith("onenn.theory.landscape=")
    assert scaling[scaling_param]("train") == "" and scaling[landscape_param]("train") == ""


def test_training_runs_the_losses_and_figures_do_not():
    train = fp.params("onenn.jobs.train:train_job")
    figure = fp.params("onenn.jobs.figures:figure_job")
    assert train[fp.param_name("onenn.maths.losses")].startswith("onenn.maths.losses=")
    assert fp.param_name("onenn.maths.losses") not in figure
    assert fp.param_name("onenn.analysis.plots") in figure and fp.param_name("onenn.analysis.plots") not in train
    assert all(
        value == f"{m}={fp.fingerprints(m)[m]}" for m, value in ((v.partition("=")[0], v) for v in train.values())
    )


def test_the_snakefiles_modules_import_neither_torch_nor_numba():
    probe = (
        "import sys; import onenn.plan.kinds, onenn.base.provenance; "
        "print(sorted(m for m in ('torch', 'numba', 'pandas') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_rule_that_runs_a_script_depends_on_its_code():
    """A rule whose script runs onenn code without ``get_code`` in its params would not rerun when that code
    changes (docs/guide.md#when-the-code-changes)."""
    missing = []
    for path in [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]:
        for name, body in re.findall(r"^rule (\w+):\n(.*?)(?=^rule |\Z)", path.read_text(), re.DOTALL | re.MULTILINE):
            if "script:" in body and "get_code" not in body:
                missing.append(f"{path.name}: rule {name}")
    assert not missing, missing


def rule_entries() -> list[str]:
    """The job functions the rules name for their code (``get_code("module:function")`` in workflow/rules)."""
    text = "".join(p.read_text() for p in sorted((ROOT / "workflow/rules").glob("*.smk")))
    return sorted(set(re.findall(r'get_code(?:_by_kind)?\("([\w.]+:\w+)"', text)))


def test_no_job_depends_on_the_python_api():
    """The package re-exports the API lazily; every job imports the package, so an import statement there would
    make every job's code the whole API's (a change of the API would rerun every job)."""
    entries = rule_entries()
    assert "onenn.jobs.datasets:test_set_job" in entries and "onenn.jobs.train:train_job" in entries
    for entry in entries:
        assert "onenn.api" not in fp.closure(entry), entry
    assert fp.closure("onenn.jobs.datasets:test_set_job") == sorted(
        ["onenn", "onenn.base", "onenn.base.columns", "onenn.base.io", "onenn.base.paths", "onenn.jobs"]
        + ["onenn.jobs.datasets", "onenn.maths", "onenn.maths.prompts", "onenn.maths.stream"]
    )
