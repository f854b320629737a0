"""Argument checks of the reduced dynamics: every bad argument is a ``ValueError`` that names it."""

from __future__ import annotations

import math

import numpy as np


def check_integer(name: str, value: int, minimum: int = 1) -> None:
    """An integer (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def check_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def check_finite(name: str, value: float) -> None:
    if not (isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
