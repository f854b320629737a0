"""The HTML report of a quick run (snakemake --report): every figure with its caption, grouped by experiment;
the headline table as a page."""

import base64
import urllib.parse

from tests.workflow.helpers import report_data, snakemake


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
        # a figure of the paper's states its claim; one of this project's own experiments, its question
        assert ("The paper's claim" in entry["caption"]) != ("Our question" in entry["caption"])
        assert "The figure" in entry["caption"]
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
