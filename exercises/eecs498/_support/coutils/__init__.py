"""EECS 498-007 / 598-005's `coutils` helpers, as its notebooks import them (`from coutils import
fix_random_seed, rel_error, compute_numeric_gradient, Solver`). Written for the grader, after the names
and behaviour the course's notebooks rely on: a notebook handed in whole imports and runs its cells here,
where the course's package is not installed. Nothing in it draws, downloads or trains.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import torch

__all__ = [
    "Solver",
    "compute_numeric_gradient",
    "fix_random_seed",
    "grad_check_sparse",
    "rel_error",
    "reset_seed",
    "tensor_to_image",
]


def fix_random_seed(seed_no: int = 0) -> None:
    """Seed Python's and torch's generators, as the course's notebooks do before each check."""
    random.seed(seed_no)
    torch.manual_seed(seed_no)


def reset_seed(number: int = 0) -> None:
    """The later name of fix_random_seed."""
    fix_random_seed(number)


def rel_error(x: Any, y: Any, eps: float = 1e-10) -> float:
    """The largest entry-wise difference of x and y over the larger of their magnitudes: |x - y|_max /
    max(|x|_max + |y|_max, eps), one number (0 when they agree)."""
    a = torch.as_tensor(x, dtype=torch.float64)
    b = torch.as_tensor(y, dtype=torch.float64)
    top = (a - b).abs().max().item() if a.numel() else 0.0
    bottom = (a.abs() + b.abs()).max().item() if a.numel() else 0.0
    return float(top / max(bottom, eps))


def compute_numeric_gradient(
    f: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    dLdf: torch.Tensor | None = None,
    h: float = 1e-7,
) -> torch.Tensor:
    """The gradient of sum(f(x) * dLdf) with respect to x by central differences, one entry of x at a
    time (x is changed in place and restored). Without dLdf, f's output is summed."""
    flat = x.contiguous().view(-1)
    grad = torch.zeros_like(flat)
    for i in range(flat.numel()):
        old = flat[i].item()
        flat[i] = old + h
        plus = f(x).clone()
        flat[i] = old - h
        minus = f(x).clone()
        flat[i] = old
        upstream = torch.ones_like(plus) if dLdf is None else dLdf
        grad[i] = ((plus - minus) * upstream).sum() / (2 * h)
    return grad.view_as(x)


def grad_check_sparse(
    f: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    analytic_grad: torch.Tensor,
    num_checks: int = 10,
    h: float = 1e-7,
) -> list[float]:
    """Compare analytic_grad with central differences of the scalar f at `num_checks` random entries of x;
    the relative errors, one per entry checked (the course's version prints them)."""
    fix_random_seed(0)
    errors = []
    for _ in range(num_checks):
        index = tuple(random.randrange(m) for m in x.shape)
        old = x[index].item()
        x[index] = old + h
        plus = float(f(x))
        x[index] = old - h
        minus = float(f(x))
        x[index] = old
        numeric = (plus - minus) / (2 * h)
        analytic = float(analytic_grad[index])
        errors.append(abs(numeric - analytic) / max(abs(numeric) + abs(analytic), 1e-12))
    return errors


def tensor_to_image(tensor: torch.Tensor) -> Any:
    """A (3, H, W) float tensor in [0, 1] as an (H, W, 3) uint8 array, for plotting."""
    return tensor.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to("cpu", torch.uint8).numpy()


class Solver:
    """Stands in for the course's training loop: it takes its arguments and trains nothing (a notebook's
    training cells are its own business, not what the grader checks)."""

    def __init__(self, model: Any = None, data: Any = None, **kwargs: Any) -> None:
        self.model = model
        self.data = data
        self.options = kwargs
        self.loss_history: list[float] = []
        self.train_acc_history: list[float] = []
        self.val_acc_history: list[float] = []

    def train(self) -> None:
        raise NotImplementedError("the grader's coutils.Solver stands in for the course's: it trains nothing")
