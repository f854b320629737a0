"""Reduced dynamics on the two-parameter family ``W = diag(xi1 I_d, 0_{KxK}, -xi2)`` (docs/method.md §4, §7).

On the family the loss of a prompt depends on the inputs only through the inner products
``t_j = <x_j, x_{N+1}>`` (i.i.d., ``t = 2 Beta((d-1)/2, (d-1)/2) - 1``), and, once the labels are integrated
out in closed form, only through ``t``. numpy and scipy only, no torch. One module per concern:

- ``sampling``: the law of ``t``, plain samples and the weighted population sample of the audit;
- ``loss``: the reduced loss, its exact gradient and its Monte-Carlo error on a fixed sample, the landscape;
- ``dynamics``: the full-matrix gradient descent of docs/method.md §4 on the family, and its gradient flow;
- ``thresholds``: the thresholds on ``sigma`` and the invariant ``xi1 <= (7/15) xi2`` of docs/method.md §7;
- ``late_time``: the loss's asymptote at large ``xi1`` and the late-time law's flow (docs/method.md §7.3);
- ``checks``: the argument checks they share.
"""
