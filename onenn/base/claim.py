"""A claim of the paper as data (``workflow/claims.yaml``, docs/claims.md): built by ``onenn.plan.claims_file``,
scored by ``onenn.analysis.scorecard``."""

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Quantity:
    """A column of a table at the first or last saved step, or per seed last/first or last − first; divided by
    (K − 1)/K or by another column (``over``); with ``time: rescaled``, at the rescaled time ``((K − 1)/K)·step``."""

    column: str
    test_set: str | None = None
    step: str = "last"
    of: str = "value"
    divide_by: str | None = None
    time: str = "steps"
    over: str | None = None
    at_least: float | None = None  # check share: per seed 1 where the value reaches it, else 0


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
    """A claim, its keys as workflow/schemas/claims.schema.yaml describes them ("", 0 or () for none); ``kind`` is its
    experiment's, ``post_hoc`` its ``post_hoc_reason``, ``paper_test_size(s)`` the file's ``prompts`` and ``range``."""

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
    source: str = "paper"
    paper_test_size: int = 0
    paper_test_sizes: tuple[int, ...] = ()
    post_hoc: str = ""
    reason: str = ""
    untested: str = ""
    versus: str | None = None
