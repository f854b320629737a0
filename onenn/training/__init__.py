"""SGD (docs/method.md §4.2): a run (``train``), its engines (``cpu*``: numba; ``gpu``: Triton), ``binary``'s SGD."""
