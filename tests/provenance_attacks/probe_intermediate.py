"""Attack 2: a probe intermediate with retain_grad beside dz (retain_grad), both from one backward call."""
import numpy as np
import torch

def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    z = W @ x + b
    z.retain_grad()
    q = torch.ones((), dtype=torch.float64, requires_grad=True) * 1.0
    q.retain_grad()
    f = torch.sigmoid(z).sum()
    (f + q).backward()
    dz = z.grad / q.grad
    return f, W.grad, (dz @ x.T).detach()
