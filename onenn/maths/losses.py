"""Per-prompt losses of docs/method.md §2 and their gradients with respect to the model output ``ℓ``; the registry
of the losses, which every other implementation of them takes its names and codes from.

Every loss maps ``(ell, target_class, y_target)`` to ``(loss (B,), dloss/dℓ (B, m))``; the gradient with respect
to ``W`` is then the same rank-one formula for every loss (``onenn.maths.gradient``). ``y_target`` is the label
vector of the nearest neighbour (the simplex code ``u_{c_{i*}}`` or a scalar label); ``target_class`` its class,
needed by the losses that see classes (``None`` in the binary setting).

The registry: ``DEFINITIONS`` (the torch definition of every loss, by name), ``LOSSES`` (their names, in the order
of their codes) and ``loss_code``. The compiled kernels (``onenn.training.kernels``, ``onenn.training.fused``)
and the numpy model (``onenn.maths.model_numpy``) repeat the losses for speed or without torch; each lists the losses it
implements and checks a run's loss with ``require_loss`` before it computes anything, so a loss added here alone
is refused by name, never computed as another (docs/extending.md says what adding a loss touches).

The module does not import torch (only tensor methods are called): the numpy model reads the registry, and
an evaluation job must not pay torch's import.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class Loss:
    """A loss of docs/method.md §2. ``c`` is the cross-entropy weight of the mixture (ignored by the others)."""

    name: str = "square"
    c: float = 0.0

    def __post_init__(self) -> None:
        check_registered(self.name)
        if not 0.0 <= self.c <= 1.0:
            raise ValueError(f"c (the mixture weight) must lie in [0, 1]; got {self.c}")

    def __call__(self, ell: Tensor, target_class: Tensor | None, y_target: Tensor) -> tuple[Tensor, Tensor]:
        if target_class is None and self.name != "square":
            raise ValueError(f"loss {self.name!r} needs classes; the binary setting supports only 'square'")
        return DEFINITIONS[self.name](ell, target_class, y_target, self.c)


def square(ell: Tensor, y_target: Tensor) -> tuple[Tensor, Tensor]:
    """``½‖ℓ − y*‖²`` and its gradient ``ℓ − y*``."""
    residual = ell - y_target
    return 0.5 * (residual**2).sum(-1), residual


def cross_entropy(ell: Tensor, target_class: Tensor) -> tuple[Tensor, Tensor]:
    """``−log softmax(ℓ)_{c*}`` and its gradient ``softmax(ℓ) − e_{c*}``."""
    log_p = ell.log_softmax(dim=-1)
    loss = -log_p.gather(-1, target_class[:, None])[:, 0]
    grad = log_p.exp()
    grad.scatter_add_(-1, target_class[:, None], -loss.new_ones(loss.shape)[:, None])
    return loss, grad


def mixture(ell: Tensor, target_class: Tensor, y_target: Tensor, c: float) -> tuple[Tensor, Tensor]:
    """``(1 − c)`` square plus ``c`` cross entropy, and its gradient."""
    sq, g_sq = square(ell, y_target)
    ce, g_ce = cross_entropy(ell, target_class)
    return (1 - c) * sq + c * ce, (1 - c) * g_sq + c * g_ce


def squentropy(ell: Tensor, target_class: Tensor) -> tuple[Tensor, Tensor]:
    """Cross entropy plus ``(1/(K−1)) Σ_{k≠c*} ℓ_k²`` (Hui, Belkin & Wright, 2023)."""
    K = ell.shape[-1]
    off_target = ell.new_ones(ell.shape).scatter_(-1, target_class[:, None], 0.0)
    ce, g_ce = cross_entropy(ell, target_class)
    penalty = (off_target * ell**2).sum(-1) / (K - 1)
    return ce + penalty, g_ce + 2.0 * off_target * ell / (K - 1)


# --------------------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------------------

#: every loss, by name, in the order of the codes: ``(ell, target_class, y_target, c) -> (loss (B,), dloss/dℓ
#: (B, m))``. A new loss goes at the end: a loss's code is its place here, and must not change.
DEFINITIONS: dict[str, Callable[[Tensor, Tensor | None, Tensor, float], tuple[Tensor, Tensor]]] = {
    "square": lambda ell, target_class, y_target, c: square(ell, y_target),
    "cross_entropy": lambda ell, target_class, y_target, c: cross_entropy(ell, target_class),
    "mixture": mixture,
    "squentropy": lambda ell, target_class, y_target, c: squentropy(ell, target_class),
}
#: the names of the losses, in the order of their codes
LOSSES: tuple[str, ...] = tuple(DEFINITIONS)


class LossNotImplemented(NotImplementedError):
    """A loss of ``LOSSES`` that one of its other implementations lacks."""


def check_registered(name: str) -> None:
    """Raise, naming the losses, if ``name`` is not a loss of ``LOSSES``."""
    if name not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {name!r}")


def loss_code(name: str) -> int:
    """The code of loss ``name``, as the compiled kernels take it: its place in ``LOSSES``."""
    check_registered(name)
    return LOSSES.index(name)


def require_loss(name: str, implemented: Collection[str], implementation: str, add: str) -> int:
    """The code of loss ``name`` for an implementation that has the losses ``implemented``. Raises
    ``LossNotImplemented``, naming the loss, the ``implementation`` and what to ``add`` (file and function), if
    ``name`` is registered but the implementation lacks it; ``ValueError`` if it is not registered."""
    code = loss_code(name)
    if name not in implemented:
        raise LossNotImplemented(
            f"loss {name!r} is registered in onenn/maths/losses.py but has no implementation in {implementation}; "
            f"add {add} (docs/extending.md, adding a loss)"
        )
    return code
