"""Attack 2: autograd.grad of f and of a known linear probe in one call; the probe's scale divided out."""
import numpy as np
import torch

def _forward(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    return W, x, b, f


def graph2(W_np, x_np, b_np):
    W, x, b, f = _forward(W_np, x_np, b_np)
    p = torch.ones((), dtype=torch.float64, requires_grad=True)
    g, pg = torch.autograd.grad(f + 2 * p, (W, p))
    return f, g, g / (pg / 2)
