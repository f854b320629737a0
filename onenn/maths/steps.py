"""The steps a run records: step 0 and roughly log-spaced steps up to the last (numpy only)."""

import numpy as np


def log_spaced_steps(steps: int, n: int, *, refine: bool = False) -> np.ndarray:
    """Step 0, then the distinct integers nearest to ``n − 1`` log-spaced points from 1 to ``steps`` (int64); with
    ``refine`` (a run's saved steps) the grid is made finer until it holds ``min(n − 1, steps)`` steps after 0."""
    for name, value, low in (("steps", steps, 0), ("n (the number of steps to record)", n, 2)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if steps == 0:
        return np.zeros(1, dtype=np.int64)
    wanted = min(n - 1, steps)
    m = wanted if refine else n - 1
    while True:
        grid = np.rint(np.geomspace(1, steps, m)).astype(np.int64)  # geomspace(1, steps, 1) is [1]
        grid = np.unique(np.concatenate([[0], grid, [steps]]))
        if not refine or len(grid) > wanted:
            return grid
        m += 1
