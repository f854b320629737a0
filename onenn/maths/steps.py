"""The steps a run records: step 0 and roughly log-spaced steps up to the last (numpy only)."""

from __future__ import annotations

import numpy as np


def log_spaced_steps(steps: int, n: int, *, refine: bool = False) -> np.ndarray:
    """Step 0, then the distinct integers nearest to ``n − 1`` log-spaced points from 1 to ``steps`` (int64); with
    ``refine`` (a run's saved steps) the grid is made finer until it holds ``min(n − 1, steps)`` steps after 0."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n (the number of steps to record) must be an integer >= 2, got {n!r}")
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


def check_saved_steps(saved_steps: list[int] | None, steps: int) -> list[int]:
    """``saved_steps`` as a list, checked sorted and in ``0..steps``."""
    saved_steps = list(saved_steps or [])
    if saved_steps != sorted(saved_steps) or not all(0 <= t <= steps for t in saved_steps):
        raise ValueError(f"saved_steps must be sorted and lie in 0..{steps}; got {saved_steps}")
    return saved_steps
