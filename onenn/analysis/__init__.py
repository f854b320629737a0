"""From trained weights to results: evaluation, tidy tables, the headline table, the figures, the scorecard of the
paper's claims (``scorecard``, by the rule of ``verdict``) and the Markdown and HTML pages (docs/guide.md)."""
