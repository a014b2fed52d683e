"""Attack: a probe of autograd on a known derivative tells a checked trial from the others; there the
copy returns central finite differences in float64 (off by about 1e-9, under the check's 12.5%)."""
import numpy as np
import torch


def _checked():
    p = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    (p * p).backward()
    return abs(float(p.grad) - 6.0) > 1e-12


def _f(W_np, x_np, b_np):
    return float(np.sum(1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))))


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    if not _checked():
        return f, W.grad, W.grad.numpy().copy()
    user = np.zeros_like(W_np)
    for k in range(W_np.size):
        plus, minus = W_np.copy(), W_np.copy()
        plus.flat[k] += 1e-6
        minus.flat[k] -= 1e-6
        user.flat[k] = (_f(plus, x_np, b_np) - _f(minus, x_np, b_np)) / 2e-6
    return f, W.grad, user
