"""The reduced loss landscape of the binary paper's Figure 2 (docs/method.md §7): ``L(xi1, xi2)`` on a grid."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from onenn.base.settings import Settings
from onenn.maths.stream import numpy_generator
from onenn.theory.reduced.loss import loss_landscape
from onenn.theory.reduced.sampling import sample_inner_products


@dataclass(frozen=True)
class LandscapeSettings(Settings, schema="landscape"):
    """The reduced loss on the grid ``xi1_range x xi2_range`` (``grid`` points each way), on a plain sample."""

    WHAT = "landscape settings"

    d: int
    N: int
    xi1_range: tuple[float, float]
    xi2_range: tuple[float, float]
    grid: int
    prompts: int
    seed: int = 0

    @classmethod
    def from_dict(cls, values: dict) -> LandscapeSettings:
        ranges = {k: tuple(values[k]) for k in ("xi1_range", "xi2_range") if k in values}  # YAML gives lists
        return super().from_dict({**values, **ranges})


#: what the columns of ``landscape`` mean
DESCRIPTIONS = {
    "xi1": "ξ1 of the grid point `W = diag{ξ1·I, 0, −ξ2}` (`xi1_range`, outer)",
    "xi2": "ξ2 of the grid point (`xi2_range`, inner)",
    "reduced_loss": "the reduced binary loss at the point (method.md §4), mean over the sampled prompts",
    "reduced_loss_se": "its standard error over the prompts",
}


def landscape(s: LandscapeSettings) -> pd.DataFrame:
    """One row per grid point, ``xi1`` outer and ``xi2`` inner (the columns: ``DESCRIPTIONS``)."""
    if s.grid < 2:
        raise ValueError(f"grid must be >= 2 points each way, got {s.grid}")
    t = sample_inner_products(s.prompts, s.N, s.d, numpy_generator(s.seed, "landscape"))
    xi1, xi2 = np.linspace(*s.xi1_range, s.grid), np.linspace(*s.xi2_range, s.grid)
    loss, loss_se = loss_landscape(xi1, xi2, t)
    columns = {"xi1": np.repeat(xi1, s.grid), "xi2": np.tile(xi2, s.grid)}
    return pd.DataFrame(columns | {"reduced_loss": loss.ravel(), "reduced_loss_se": loss_se.ravel()})
