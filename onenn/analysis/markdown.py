"""The Markdown of the headline table, the scorecard and the README's pages (headings, paragraphs, pipe tables),
and its HTML page for the report (which shows HTML inline). No pandas, no Markdown library."""

import html
import itertools
import math
from collections.abc import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def number(value: float | None, digits: int = 4) -> str:
    """A value to ``digits`` significant digits; ``–`` for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}g}"


def cell(text: object) -> str:
    """Text for a pipe-table cell (a ``|`` would split it)."""
    return str(text).replace("|", "∣")


# --- reading: the HTML page of the report ----------------------------------------------------------------------

STYLE = """body { font-family: sans-serif; font-size: 13px; margin: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }"""


def html_table(lines: list[str]) -> str:
    rows = [[part.strip() for part in line.strip().strip("|").split("|")] for line in lines]  # "| a | b |" -> a, b
    ruled = len(rows) > 1 and all(part and set(part) <= set("-:") for part in rows[1])  # a header's rule: |---|:--:|
    head, body = (rows[0], rows[2:]) if ruled else ([], rows)
    out = ["<table>"]
    if head:
        out.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>")
    out += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body]
    return "\n".join(out + ["</table>"])


def line_kind(line: str) -> str:
    """``heading``, ``table``, ``paragraph``, or ``""`` for a blank line."""
    if not line.strip():
        return ""
    if line.startswith("#"):
        return "heading"
    return "table" if line.lstrip().startswith("|") else "paragraph"


def markdown_to_html(text: str, title: str) -> str:
    """A standalone HTML page of ``#`` headings, paragraphs and pipe tables (text escaped), a block per run of lines."""
    body = []
    for kind, group in itertools.groupby(text.splitlines(), line_kind):
        lines = list(group)
        if kind == "heading":
            for line in lines:
                level = min(len(line) - len(line.lstrip("#")), 6)
                body.append(f"<h{level}>{html.escape(line.lstrip('#').strip())}</h{level}>")
        elif kind == "table":
            body.append(html_table(lines))
        elif kind:
            body.append(f"<p>{html.escape(' '.join(line.strip() for line in lines))}</p>")
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
