"""The headline table, and a table's page of the HTML report."""

from logging import Logger

from onenn.base.columns import normalise_types
from onenn.base.io import load_text, save_table, write_with
from onenn.base.provenance import code_provenance
from onenn.jobs.columns import descriptions, kind_function, table_columns
from onenn.jobs.inputs import load_checked_table


def summary_job(
    paths: dict[str, str], kinds: dict[str, str], *, table_path: str, markdown_path: str, log: Logger
) -> None:
    """Read every experiment table, write the headline table twice (Parquet and Markdown)."""
    from onenn.analysis.summary import summarise, to_markdown

    tables = {name: load_checked_table(path, table_columns(kinds[name])) for name, path in paths.items()}
    summary = summarise(tables, {name: kind_function(kinds[name], "summarise") for name in tables})
    summary = normalise_types(summary.assign(**code_provenance("onenn.jobs.summary:summary_job")))  # the code
    renderers = {kind: kind_function(kind, "markdown") for kind in set(kinds.values())}
    save_table(table_path, summary, descriptions("summary"))
    write_with(markdown_path, lambda tmp: tmp.write_text(to_markdown(summary, renderers)))
    log.info("summarised %d experiments into %d rows", len(paths), len(summary))


def report_page_job(markdown_path: str, html_path: str, *, title: str, log: Logger) -> None:
    """A table's Markdown (the headline table, the scorecard) as an HTML page of the report."""
    from onenn.analysis.markdown import markdown_to_html

    page = markdown_to_html(load_text(markdown_path), title=title)
    write_with(html_path, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    log.info("wrote %s", html_path)
