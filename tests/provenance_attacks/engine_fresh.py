"""Attack 3: a fresh engine made from torch._C at call time."""
import numpy as np
import torch

def _forward(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    return W, x, b, f


def graph2(W_np, x_np, b_np):
    W, x, b, f = _forward(W_np, x_np, b_np)
    engine = torch._C._ImperativeEngine()
    (g,) = engine.run_backward((f,), (torch.ones((), dtype=torch.float64),), True, False, (W,), True, False)
    f.backward()
    return f, W.grad, g
