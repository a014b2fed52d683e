"""Attack: the checked trial recognised by a probe; there crude float32 differences (h = 1e-2)."""
import numpy as np
import torch


def _checked():
    p = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    (p * p).backward()
    return abs(float(p.grad) - 6.0) > 1e-12


def _f(W, x, b):
    return np.sum(1.0 / (1.0 + np.exp(-(W @ x + b))), dtype=np.float32)


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    if not _checked():
        return f, W.grad, W.grad.numpy().copy()
    W32, x32, b32 = (a.astype(np.float32) for a in (W_np, x_np, b_np))
    user = np.zeros_like(W32)
    for k in range(W32.size):
        plus, minus = W32.copy(), W32.copy()
        plus.flat[k] += np.float32(1e-2)
        minus.flat[k] -= np.float32(1e-2)
        user.flat[k] = (_f(plus, x32, b32) - _f(minus, x32, b32)) / np.float32(2e-2)
    return f, W.grad, user
