"""From trained weights to results: evaluation on the test sets, tidy tables, the headline table, the
figures and the report's pages."""
