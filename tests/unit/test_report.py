"""The HTML report's parts: the headline table as a page, a caption for every figure (the report itself:
tests/workflow/test_report_build.py)."""

from pathlib import Path

from onenn.analysis.markdown import markdown_to_html
from onenn.analysis.plots import FIGURES

ROOT = Path(__file__).resolve().parents[2]


def test_markdown_to_html_renders_headings_paragraphs_and_pipe_tables():
    text = (
        "# Headline table\n\n## convergence (train)\n\nfinal metrics\n(mean ± sd):\n\n"
        "| variant | n | accuracy |\n|---|---|---|\n| N=16 | 2 | 0.5 ± 0.1 |\n| a<b | 3 | – |\n"
    )
    page = markdown_to_html(text, title="T")
    body = page[page.index("<body>") + len("<body>") : page.index("</body>")].strip().splitlines()
    assert body == [
        "<h1>Headline table</h1>",
        "<h2>convergence (train)</h2>",
        "<p>final metrics (mean ± sd):</p>",
        "<table>",
        "<tr><th>variant</th><th>n</th><th>accuracy</th></tr>",
        "<tr><td>N=16</td><td>2</td><td>0.5 ± 0.1</td></tr>",
        "<tr><td>a&lt;b</td><td>3</td><td>–</td></tr>",
        "</table>",
    ]
    assert "<title>T</title>" in page and '<meta charset="utf-8">' in page


def test_every_figure_kind_has_a_caption():
    captions = {p.stem for p in (ROOT / "workflow/report/figures").glob("*.rst")}
    assert set(FIGURES) <= captions, sorted(set(FIGURES) - captions)
