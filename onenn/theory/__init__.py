"""Computations on the two-parameter family diag{xi1 I, 0, -xi2}: the reduced dynamics, the scaling
identity, the audit of Lemma 12's invariant, the loss landscape and full-matrix gradient descent."""
