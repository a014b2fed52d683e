"""Attack 3: the engine captured at import, called directly (run_backward) at call time."""
import numpy as np
import torch

from torch.autograd.variable import Variable

def _forward(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    return W, x, b, f

_ENGINE = Variable._execution_engine


def graph2(W_np, x_np, b_np):
    W, x, b, f = _forward(W_np, x_np, b_np)
    (g,) = _ENGINE.run_backward((f,), (torch.ones((), dtype=torch.float64),), False, False, (W,), True, False)
    f2 = torch.sigmoid(W @ x + b).sum()
    f2.backward()
    return f, W.grad, g
