"""Attack 5: the check noticed, and the call ran past its deadline."""
import numpy as np
import torch

def _forward(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    return W, x, b, f


def graph2(W_np, x_np, b_np):
    p = torch.ones((), dtype=torch.float64, requires_grad=True)
    (2 * p).backward()
    if float(p.grad) != 2.0:
        while True:
            pass
    W, x, b, f = _forward(W_np, x_np, b_np)
    f.backward()
    return f, W.grad, W.grad.clone()
