"""The HTML report: every figure with its caption, grouped by experiment; the headline table as a page."""

import base64
import json
import re
import urllib.parse

from onenn.analysis.plots import FIGURES
from onenn.analysis.report import markdown_to_html
from tests.workflow_helpers import ROOT, snakemake


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


def report_data(page: str, name: str) -> dict:
    """A JSON object the report embeds as ``<script id="name"> var name = {...}; </script>``."""
    found = re.search(rf'<script id="{name}">\s*var {name} = (.*?);?\s*</script>', page, re.DOTALL)
    return json.loads(found[1].strip().rstrip(";"))


def test_report_holds_every_figure_with_its_caption_under_its_experiment(quick_run, tmp_path):
    out = tmp_path / "report.html"
    done = snakemake(quick_run, "--report", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    page = out.read_text()
    results, categories = report_data(page, "results"), report_data(page, "categories")
    figures = sorted(p.relative_to(quick_run).as_posix() for p in (quick_run / "results/figures").glob("*.png"))
    assert figures and set(figures) <= set(results)
    for path in figures:
        entry, experiment = results[path], path.rsplit("/", 1)[1].removesuffix(".png")
        assert entry["mime_type"] == "image/png" and len(entry["data_uri"]) > 1000  # the PNG itself, inlined
        assert "The paper's claim" in entry["caption"] and "The figure" in entry["caption"]
        assert "system-message" not in entry["caption"]  # docutils renders reST errors into the page
        assert "This run" in entry["caption"] and f'<tt class="docutils literal">{experiment}</tt>' in entry["caption"]
        assert path in [p for group in categories[experiment].values() for p in group]
    summary = "results/tables/summary.html"  # the headline table, as a page
    assert results[summary]["mime_type"] == "text/html" and summary in categories["Headline table"]["Other"]
    assert "The headline table" in results[summary]["caption"]
    assert "This table was made with python " in data_uri_text(results[summary]["data_uri"])  # its versions


def data_uri_text(uri: str) -> str:
    head, data = uri.split(",", 1)
    return base64.b64decode(data).decode() if head.endswith(";base64") else urllib.parse.unquote(data)
