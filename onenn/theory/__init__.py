"""Computations on the two-parameter family diag{xi1 I, 0, -xi2}: the reduced dynamics (``reduced``), the scaling
identity (``scaling``), the audit of Lemma 12's invariant (``audit``), the loss landscape (``landscape``) and
full-matrix gradient descent (``full_matrix``)."""
