"""The reduced dynamics on the family ``W = diag(xi1 I_d, 0_{KxK}, -xi2)``, where a prompt's loss depends on its
inputs only through the inner products ``t_j = <x_j, x_{N+1}>`` (docs/method.md §4.3, §7)."""
