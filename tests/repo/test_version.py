"""The package's version is one: ``pyproject.toml``, ``CITATION.cff``, ``onenn.__version__`` and the newest
version heading of ``CHANGELOG.md`` agree, CITATION's release date is the changelog's date of that version, and
the changelog's versions run newest first."""

import datetime
import itertools
import re
import tomllib
from pathlib import Path

import yaml

import onenn

ROOT = Path(__file__).resolve().parents[2]
HEADING = re.compile(r"^## \[(\d+)\.(\d+)\.(\d+)\] - (\d{4}-\d{2}-\d{2})\s*$", re.MULTILINE)


def changelog_versions() -> list[tuple[tuple[int, int, int], datetime.date]]:
    """Every ``## [x.y.z] - YYYY-MM-DD`` heading of the changelog, in the file's order."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    found = [
        ((int(major), int(minor), int(patch)), datetime.date.fromisoformat(date))
        for major, minor, patch, date in HEADING.findall(text)
    ]
    assert found, "CHANGELOG.md has no '## [x.y.z] - YYYY-MM-DD' heading"
    return found


def dotted(version: tuple[int, int, int]) -> str:
    return ".".join(map(str, version))


def test_one_version_everywhere():
    newest, _ = changelog_versions()[0]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))["version"]
    versions = {
        "CHANGELOG.md": dotted(newest),
        "pyproject.toml": pyproject,
        "CITATION.cff": str(citation),
        "onenn.__version__": onenn.__version__,
    }
    assert len(set(versions.values())) == 1, f"the version differs between files: {versions}"


def test_citation_date_is_the_release_date():
    newest, date = changelog_versions()[0]
    released = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))["date-released"]
    released = released if isinstance(released, datetime.date) else datetime.date.fromisoformat(str(released))
    assert released == date, (
        f"CITATION.cff's date-released {released} is not CHANGELOG.md's {dotted(newest)} date {date}"
    )


def test_changelog_newest_first():
    found = changelog_versions()
    for (newer, newer_date), (older, older_date) in itertools.pairwise(found):
        assert newer > older, f"CHANGELOG.md: {dotted(newer)} above {dotted(older)}, versions must decrease"
        assert newer_date >= older_date, f"CHANGELOG.md: {dotted(newer)} ({newer_date}) dated before {dotted(older)}"
