"""Computations on the two-parameter family diag{xi1 I, 0, -xi2} (docs/method.md §4.3, §6, §7)."""
