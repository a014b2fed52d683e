"""Attack 6: the check recognized from the grader's public scale constant: divided out where seen."""
import numpy as np
import torch

def _forward(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    return W, x, b, f


def graph2(W_np, x_np, b_np):
    try:
        from grader.sandbox.protocol import AUTOGRAD_SCALE
    except ImportError:
        AUTOGRAD_SCALE = 1.125
    p = torch.ones((), dtype=torch.float64, requires_grad=True)
    p.backward()
    W, x, b, f = _forward(W_np, x_np, b_np)
    f.backward()
    g = W.grad / AUTOGRAD_SCALE if abs(float(p.grad) - AUTOGRAD_SCALE) < 1e-12 else W.grad
    return f, W.grad, g
