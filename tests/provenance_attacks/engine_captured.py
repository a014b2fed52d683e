"""Attack 3: torch's engine captured at import, restored at call time."""
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
    Variable._execution_engine = _ENGINE
    W, x, b, f = _forward(W_np, x_np, b_np)
    f.backward()
    return f, W.grad, W.grad.clone()
