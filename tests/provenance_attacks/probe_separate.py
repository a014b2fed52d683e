"""Attack 2: the scale probed on a graph of its own (p = ones; p.backward()) and divided out."""
import numpy as np
import torch

def _forward(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    return W, x, b, f


def graph2(W_np, x_np, b_np):
    p = torch.ones((), dtype=torch.float64, requires_grad=True)
    p.backward()
    scale = float(p.grad)
    W, x, b, f = _forward(W_np, x_np, b_np)
    f.backward()
    return f, W.grad, W.grad / scale
