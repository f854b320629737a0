"""The scorecard job: every claim of the claims file scored against this run's tables."""

from logging import Logger
from typing import Any

from onenn.base.io import save_table, write_with
from onenn.jobs.columns import descriptions
from onenn.jobs.inputs import load_checked_table


def claims_job(
    claims_path: str,
    schema_path: str,
    known: dict[str, dict[str, Any]],
    tables: dict[str, str],
    *,
    table_path: str,
    markdown_path: str,
    log: Logger,
) -> None:
    """Score every claim of the claims file against this run's tables; write the scorecard as Parquet and Markdown."""
    from onenn.analysis.scorecard import scorecard, to_markdown
    from onenn.plan.claims_file import load_claims

    claims = load_claims(claims_path, known, schema_path)
    read = {name: load_checked_table(path) for name, path in tables.items()}
    card = scorecard(claims, read)
    save_table(table_path, card, descriptions("claims"))
    write_with(markdown_path, lambda tmp: tmp.write_text(to_markdown(card, read), encoding="utf-8"))
    log.info("scored %d claims: %s", len(card), card["verdict"].value_counts().to_dict())
