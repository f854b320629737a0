"""The losses of docs/method.md §2 in numpy with their gradients ``∂loss/∂ℓ`` (the reference), and the registry of
names and codes every port takes (docs/guide.md#a-loss): ``(ell, target_class, y_target, c) → (loss, ∂loss/∂ℓ)``."""

from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np


def square(ell: np.ndarray, y_target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``½‖ℓ − y*‖²`` and its gradient ``ℓ − y*``."""
    residual = ell - y_target
    return 0.5 * (residual**2).sum(-1), residual


def cross_entropy(ell: np.ndarray, target_class: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``−log softmax(ℓ)_{c*}`` and its gradient ``softmax(ℓ) − e_{c*}``."""
    shifted = ell - ell.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # log softmax(ℓ)
    loss = -np.take_along_axis(log_p, target_class[:, None], axis=-1)[:, 0]
    return loss, np.exp(log_p) - np.eye(ell.shape[-1])[target_class]


def mixture(ell: np.ndarray, target_class: np.ndarray, y_target: np.ndarray, c: float) -> tuple[np.ndarray, ...]:
    """``(1 − c)`` square plus ``c`` cross entropy, and its gradient."""
    (sq, g_sq), (ce, g_ce) = square(ell, y_target), cross_entropy(ell, target_class)
    return (1 - c) * sq + c * ce, (1 - c) * g_sq + c * g_ce


def squentropy(ell: np.ndarray, target_class: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cross entropy plus ``(1/(K−1)) Σ_{k≠c*} ℓ_k²`` (Hui, Belkin & Wright, 2023), and its gradient."""
    K = ell.shape[-1]
    off_target = np.ones_like(ell)
    np.put_along_axis(off_target, target_class[:, None], 0.0, axis=-1)
    ce, g_ce = cross_entropy(ell, target_class)
    return ce + (off_target * ell**2).sum(-1) / (K - 1), g_ce + 2.0 * off_target * ell / (K - 1)


#: every loss, by name, in the order of the codes (a new loss goes at the end: a code must not change)
DEFINITIONS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    "square": lambda ell, target_class, y_target, c: square(ell, y_target),
    "cross_entropy": lambda ell, target_class, y_target, c: cross_entropy(ell, target_class),
    "mixture": mixture,
    "squentropy": lambda ell, target_class, y_target, c: squentropy(ell, target_class),
}
LOSSES: tuple[str, ...] = tuple(DEFINITIONS)


class LossNotImplemented(NotImplementedError):
    """A loss of ``LOSSES`` that a port lacks."""


def check_registered(name: str) -> None:
    """Raise, naming the losses, if ``name`` is not a loss of ``LOSSES``."""
    if name not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {name!r}")


def loss_code(name: str) -> int:
    """The code of loss ``name``, as the compiled ports take it: its place in ``LOSSES``."""
    check_registered(name)
    return LOSSES.index(name)


def require_loss(name: str, implemented: Collection[str], implementation: str, branch: str) -> int:
    """The code of ``name`` for a port with the losses ``implemented``; else ``LossNotImplemented`` naming ``branch``."""
    code = loss_code(name)
    if name not in implemented:
        raise LossNotImplemented(
            f"loss {name!r} is registered in onenn/maths/losses.py but has no implementation in {implementation}; "
            f"add a branch to {branch} and the name to IMPLEMENTED there (docs/guide.md#a-loss)"
        )
    return code


@dataclass(frozen=True)
class Loss:
    """A loss of docs/method.md §2. ``c`` is the cross-entropy weight of the mixture (ignored by the others)."""

    name: str = "square"
    c: float = 0.0

    def __post_init__(self) -> None:
        check_registered(self.name)
        if not 0.0 <= self.c <= 1.0:
            raise ValueError(f"c (the mixture weight) must lie in [0, 1]; got {self.c}")

    def __call__(self, ell: np.ndarray, target_class: np.ndarray | None, y_target: np.ndarray) -> tuple:
        """The per-prompt losses (B,) and ``∂loss/∂ℓ`` (B, m)."""
        if target_class is None and self.name != "square":
            raise ValueError(f"loss {self.name!r} needs classes; the binary setting supports only 'square'")
        return DEFINITIONS[self.name](ell, target_class, y_target, self.c)
