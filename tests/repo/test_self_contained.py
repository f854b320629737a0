"""The repository stands on its own: no tracked text file points outside it.

A reader with a clone and the two papers must find everything here. So no git-tracked text file may refer to
the sibling folder of notes the project started from, to the contract document it once held (the upper-case
name below, as a word), or to an absolute path on a particular machine (a workspace or home folder). The
mathematics lives in docs/method.md; cite it as "docs/method.md §n".

The forbidden strings are assembled from pieces so that this file does not contain them itself.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: name -> (pattern, what to write instead)
RULES: dict[str, tuple[re.Pattern[str], str]] = {
    "sibling notes folder": (
        re.compile(re.escape(".." + "/" + "shared")),
        "put what the reader needs into docs/ and cite it there",
    ),
    "contract document": (
        re.compile(r"\b" + "SP" + "EC" + r"\b"),
        "cite docs/method.md §n (same section numbers)",
    ),
    "absolute path outside the repository": (
        # a workspace or home folder, not preceded by a word character or a dot (so URLs and relative paths pass)
        re.compile(r"(?<![\w.~-])/(?:" + "|".join(["wo" + "rk", "home", "Users", "root", "mnt", "scratch"]) + r")/"),
        "use a path relative to the repository root",
    ),
}


def tracked_files() -> list[Path]:
    """Every file git tracks in this checkout that exists in the working tree."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as err:
        pytest.fail(f"this test lists the tracked files with `git ls-files` in {ROOT}; it failed: {err}")
    paths = [ROOT / name for name in out.decode().split("\0") if name]
    return [p for p in paths if p.is_file()]


def text_of(path: Path) -> str | None:
    """The file's text, or None for a binary file (a NUL byte, or not UTF-8)."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def offenders(paths: list[Path], pattern: re.Pattern[str]) -> list[str]:
    """``path:line: text`` for every line of the text files in ``paths`` that matches ``pattern``."""
    found = []
    for path in paths:
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    return found


@pytest.fixture(scope="module")
def files() -> list[Path]:
    return tracked_files()


def test_the_checkout_has_tracked_text_files(files):
    texts = [p for p in files if text_of(p) is not None]
    assert any(p.name == "README.md" for p in texts), f"README.md is not among the {len(texts)} tracked text files"


@pytest.mark.parametrize("rule", list(RULES))
def test_no_tracked_file_refers_outside_the_repository(files, rule):
    pattern, instead = RULES[rule]
    found = offenders(files, pattern)
    assert not found, f"{len(found)} line(s) refer to the {rule} ({instead}):\n" + "\n".join(found)
