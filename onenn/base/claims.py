"""A claim of the paper, as the claims file states it (``workflow/claims.yaml``) and the scorecard reads it:
plain data, checked and built by ``onenn.plan.claims``, scored by ``onenn.analysis.claims``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Quantity:
    """A column of an experiment's table, at the first or the last saved step, or per seed last/first or
    last − first; optionally divided by (K − 1)/K."""

    column: str
    test_set: str | None = None
    step: str = "last"
    of: str = "value"
    divide_by: str | None = None

    def describe(self) -> str:
        where = f" ({self.test_set})" if self.test_set else ""
        scaled = " / ((K−1)/K)" if self.divide_by else ""
        at = {"value": f"at the {self.step} step", "ratio": "last / first step", "change": "last − first step"}
        return f"{self.column}{where}{scaled}, {at[self.of]}"


@dataclass(frozen=True)
class ClaimPoint:
    """One variant (kind train) or the rows ``where`` selects (kind scaling), with the paper's value there."""

    variant: str | None = None
    where: dict[str, Any] = field(default_factory=dict)
    value: float | str | None = None
    spread: float = 0.0
    baseline: float | None = None


@dataclass(frozen=True)
class Claim:
    id: str
    figure: int
    paper: str
    experiment: str
    kind: str
    quantity: Quantity
    check: str
    points: tuple[ClaimPoint, ...]
    resolution: float = 0.0
    by: str | None = None
    note: str = ""
