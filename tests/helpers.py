"""Helpers shared by the test modules (no test module imports another: tests/repo/test_test_modules.py checks it)."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from onenn.base.columns import normalise_types
from onenn.maths.losses import LOSSES

#: a learning rate beyond float32's range: the first update overflows, so step 1 is the first non-finite step
HUGE_LR = 1e39


def random_prompts(rng: np.random.Generator, B: int, N: int, d: int, K: int):
    """Prompts as float64 numpy arrays: x on the sphere (B, N+1, d) and classes (B, N)."""
    x = rng.standard_normal((B, N + 1, d))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return x, rng.integers(0, K, size=(B, N))


# --- small tables whose statistics are known by hand (the headline table, provenance) --------------------------


def train_table() -> pd.DataFrame:
    """Two variants (K = 10 and K = 2, in that order), seeds 0..2, steps 0 and 50, two test sets. At the last
    step the separated accuracy is 0.5, 0.7, 0.9 over the seeds (mean 0.7, sd 0.2); the distance to the
    family goes from 2 to 1, 2, 3 (per-seed ratio 0.5, 1, 1.5: mean 1, sd 0.5); the label norm stays 4."""
    rows = []
    for variant, K in (("K=10", 10), ("K=2", 2)):
        for seed in range(3):
            for step in (0, 50):
                for test_set in ("separated", "uniform"):
                    last = step == 50
                    rows.append(
                        {
                            "experiment": "e",
                            "variant": variant,
                            "seed": seed,
                            "step": step,
                            "test_set": test_set,
                            "accuracy": (0.5 + 0.2 * seed if test_set == "separated" else 0.4) if last else 0.1,
                            "logit_error": 1.0,
                            "test_loss": 0.25 * K,
                            "minibatch_loss": float(seed),
                            "dist_family": float(seed + 1) if last else 2.0,
                            "dist_family_active": 0.0,
                            "label_norm": 4.0,
                            "K": K,
                            "epsilon": 0.5,
                        }
                    )
    return normalise_types(pd.DataFrame(rows))


def scaling_table() -> pd.DataFrame:
    return normalise_types(
        pd.DataFrame(
            {
                "experiment": ["s", "s"],
                "panel": ["by_K", "grid"],
                "xi1": [2.0, 1.0],
                "xi2": [5.0, 2.0],
                "K": [3, 10],
                "prompts": [800, 400],
                "L_MC": [0.2, 0.3],
                "L_MC_se": [0.01, 0.02],
                "L_bin": [0.3, 0.33],
                "L_bin_se": [0.01, 0.02],
                "ratio": [0.66, 0.91],
                "ratio_se": [0.01, 0.02],
                "ratio_lower": [0.64, 0.87],
                "ratio_upper": [0.68, 0.95],
                "ci_level": [0.95, 0.95],
                "reference": [2 / 3, 0.9],
            }
        )
    )


# --- provenance ---------------------------------------------------------------------------------------------

#: the software a result records, in the order of its sentence
SOFTWARE = ("python", "torch", "numba", "numpy", "snakemake", "scipy", "pandas", "pyarrow", "seaborn", "triton")


def installed_versions() -> dict[str, str]:
    """The versions of this interpreter and of the packages a result records, as the modules themselves report
    them (``sys.version_info``, ``__version__``): not through ``importlib.metadata``, which the code reads."""
    import importlib

    python = ".".join(str(part) for part in sys.version_info[:3])
    found = {"python": python}
    for name in SOFTWARE[1:]:
        try:
            found[name] = str(importlib.import_module(name).__version__)
        except ModuleNotFoundError:
            found[name] = "not installed"  # triton, off Linux x86_64
    return found


def recorded(record: dict) -> dict:
    """The versions a run record or a table row carries."""
    return {key: record.get(key) for key in SOFTWARE}


def made_with(versions: dict[str, str]) -> str:
    """The headline table's sentence on its software."""
    return "This table was made with " + ", ".join(f"{key} {versions[key]}" for key in SOFTWARE) + "."


#: one case per loss of the registry (``onenn.maths.losses.LOSSES``), as settings: the mixture at an interior weight, where
#: both of its terms count (the other losses ignore ``c``). The equivalence tests run over these, so a loss added to
#: the registry is covered, and fails them until every implementation has it (docs/guide.md#a-loss).
LOSS_CASES = [{"loss": name, "c": 0.3 if name == "mixture" else 0.0} for name in LOSSES]


def loss_id(case: dict) -> str:
    """A test id for a dictionary of settings changes: its values, or ``default``."""
    return "-".join(f"{key}={value}" for key, value in case.items()) or "default"
