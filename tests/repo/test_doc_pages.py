"""README.md and docs/*.md: every image they show is made by a rule of the README's files
(workflow/rules/readme.smk), for an experiment a configuration defines, and is committed; every relative link
they make reaches a file of the repository, and its ``#anchor`` a heading of that page. Static checks, no
Snakemake."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from onenn.base import paths

ROOT = Path(__file__).resolve().parents[2]
READMES_RULES = ROOT / "workflow/rules/readme.smk"
#: a link in Markdown, ``[text](target)`` (an image's too)
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
#: an image in Markdown, ``![alt](path)``, or in HTML, ``<img src="path">``
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|<img\s[^>]*src=[\"']([^\"']+)[\"']")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def images(page: Path) -> list[str]:
    """The repository paths of the images ``page`` shows (links to the web left out)."""
    found = [a or b for a, b in IMAGE.findall(page.read_text(encoding="utf-8"))]
    local = [p.split("#")[0] for p in found if not re.match(r"[a-z]+://", p)]
    return [(page.parent / p).resolve().relative_to(ROOT).as_posix() for p in local]


def readme_outputs() -> dict[str, list[str]]:
    """Rule of readme.smk -> the paths.py patterns of its ``output:`` section."""
    out = {}
    for block in re.split(r"^rule ", READMES_RULES.read_text(), flags=re.MULTILINE)[1:]:
        name = block.split(":", 1)[0].strip()
        section = re.search(r"^    output:\n(.*?)^    \w+:", block, flags=re.MULTILINE | re.DOTALL)
        out[name] = [getattr(paths, n) for n in re.findall(r"paths\.([A-Z_]+)", section.group(1))] if section else []
    return out


def wildcards(pattern: str, path: str) -> dict[str, str] | None:
    """The wildcards of ``pattern`` that give ``path`` (one folder level each), or ``None`` if it does not match."""
    parts = re.split(r"\{(\w+)\}", pattern)
    regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/]+)" for i, p in enumerate(parts))
    found = re.fullmatch(regex, path)
    return found.groupdict() if found else None


def defined_experiments() -> set[str]:
    """The experiments of config.yaml and of the configuration files of workflow/examples/."""
    files = [ROOT / "config.yaml", *sorted((ROOT / "workflow/examples").glob("*.yaml"))]
    return {name for f in files for name in (yaml.safe_load(f.read_text()).get("experiments") or {})}


def committed() -> set[str]:
    done = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(done.stdout.splitlines())


SHOWN = sorted({(page.relative_to(ROOT).as_posix(), image) for page in pages() for image in images(page)})


def test_the_pages_show_images():
    """The check below looks at something: the README shows the run's figures."""
    assert any(page == "README.md" for page, _ in SHOWN)
    assert IMAGE.findall('![a](x.png) <img alt="b" src="y.png">') == [("x.png", ""), ("", "y.png")]


@pytest.mark.parametrize(("page", "image"), SHOWN)
def test_every_image_a_page_shows_is_made_by_a_rule_of_the_readme_files(page, image):
    made = [
        (rule, found)
        for rule, patterns in readme_outputs().items()
        for pattern in patterns
        if (found := wildcards(pattern, image)) is not None
    ]
    assert made, f"{page} shows {image}, which no rule of workflow/rules/readme.smk makes"
    rule, found = made[0]
    if "experiment" in found:  # readme_figure's constraint: the experiments results/readme/ keeps
        assert found["experiment"] in paths.README_EXPERIMENTS, (
            f"{page} shows {image}: rule {rule} makes the figures of paths.README_EXPERIMENTS alone"
        )
        assert found["experiment"] in defined_experiments(), (
            f"{page} shows {image}: no configuration of the repository defines experiment {found['experiment']!r}"
        )
    assert image in committed(), f"{page} shows {image}, which is not committed (rerun rule {rule} and commit it)"


def prose(page: Path) -> str:
    """The page's text without its fenced code blocks and inline code, where brackets are not links."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of the page's headings: lower case, punctuation but ``-`` and ``_`` dropped, spaces to
    ``-``, a repeated one numbered ``-1``, ``-2``, ..."""
    found: set[str] = set()
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n, base = 0, slug
        while slug in found:
            n += 1
            slug = f"{base}-{n}"
        found.add(slug)
    return found


LINKS = sorted(
    {
        (page.relative_to(ROOT).as_posix(), target)
        for page in pages()
        for target in LINK.findall(prose(page))
        if not re.match(r"[a-z]+:", target)
    }
)


def test_the_link_check_reads_links_and_anchors():
    """The check below looks at something, and the anchor rule is GitHub's on the headings this project uses."""
    assert any(page == "README.md" and target.startswith("docs/") for page, target in LINKS)
    assert LINK.findall("see [a](b.md#c) and ![d](e.png)") == ["b.md#c", "e.png"]
    assert anchors(ROOT / "docs/method.md") >= {"8-glossary"}


@pytest.mark.parametrize(("page", "target"), LINKS)
def test_every_link_reaches_a_file_and_its_anchor_a_heading(page, target):
    path, _, anchor = target.partition("#")
    source = ROOT / page
    reached = (source.parent / path).resolve() if path else source
    assert reached.exists(), f"{page} links {target}, and {path} does not exist"
    if anchor and reached.suffix == ".md":
        assert anchor in anchors(reached), f"{page} links {target}: {reached.name} has no heading with that anchor"
