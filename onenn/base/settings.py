"""The base of the settings dataclasses (training, binary training, audit, landscape, full-matrix GD): built
from a config mapping, which may hold only the dataclass's own keys."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import ClassVar, Self

#: the devices a training run may name: ``auto`` (CUDA where torch sees a GPU, else the CPU), ``cpu``, ``cuda``
DEVICES = ("auto", "cpu", "cuda")


class Settings:
    """Mixin for a frozen dataclass: ``from_dict`` rejects unknown keys by name, ``to_dict`` is ``asdict``."""

    #: what the settings are, for the error message ("unknown <WHAT> [...]")
    WHAT: ClassVar[str] = "settings"

    @classmethod
    def from_dict(cls, values: dict) -> Self:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown {cls.WHAT} {unknown}; allowed: {sorted(known)}")
        return cls(**values)

    def to_dict(self) -> dict:
        return asdict(self)
