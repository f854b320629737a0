"""Per-prompt losses of docs/method.md §2 and their gradients with respect to the model output ``ℓ``.

Every loss maps ``(ell, target_class, y_target)`` to ``(loss (B,), dloss/dℓ (B, m))``; the gradient with respect
to ``W`` is then the same rank-one formula for every loss (``onenn.gradient``). ``y_target`` is the label
vector of the nearest neighbour (the simplex code ``u_{c_{i*}}`` or a scalar label); ``target_class`` its class,
needed by the losses that see classes (``None`` in the binary setting).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

LOSSES = ("square", "cross_entropy", "mixture", "squentropy")


@dataclass(frozen=True)
class Loss:
    """A loss of docs/method.md §2. ``c`` is the cross-entropy weight of the mixture (ignored by the others)."""

    name: str = "square"
    c: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {self.name!r}")
        if not 0.0 <= self.c <= 1.0:
            raise ValueError(f"c (the mixture weight) must lie in [0, 1]; got {self.c}")

    def __call__(
        self, ell: torch.Tensor, target_class: torch.Tensor | None, y_target: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.name == "square":
            return square(ell, y_target)
        if target_class is None:
            raise ValueError(f"loss {self.name!r} needs classes; the binary setting supports only 'square'")
        if self.name == "cross_entropy":
            return cross_entropy(ell, target_class)
        if self.name == "squentropy":
            return squentropy(ell, target_class)
        sq, g_sq = square(ell, y_target)
        ce, g_ce = cross_entropy(ell, target_class)
        return (1 - self.c) * sq + self.c * ce, (1 - self.c) * g_sq + self.c * g_ce


def square(ell: torch.Tensor, y_target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``½‖ℓ − y*‖²`` and its gradient ``ℓ − y*``."""
    residual = ell - y_target
    return 0.5 * (residual**2).sum(-1), residual


def cross_entropy(ell: torch.Tensor, target_class: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``−log softmax(ℓ)_{c*}`` and its gradient ``softmax(ℓ) − e_{c*}``."""
    log_p = torch.log_softmax(ell, dim=-1)
    loss = -log_p.gather(-1, target_class[:, None])[:, 0]
    grad = log_p.exp()
    grad.scatter_add_(-1, target_class[:, None], -torch.ones_like(loss)[:, None])
    return loss, grad


def squentropy(ell: torch.Tensor, target_class: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross entropy plus ``(1/(K−1)) Σ_{k≠c*} ℓ_k²`` (Hui, Belkin & Wright, 2023)."""
    K = ell.shape[-1]
    off_target = torch.ones_like(ell).scatter_(-1, target_class[:, None], 0.0)
    ce, g_ce = cross_entropy(ell, target_class)
    penalty = (off_target * ell**2).sum(-1) / (K - 1)
    return ce + penalty, g_ce + 2.0 * off_target * ell / (K - 1)
