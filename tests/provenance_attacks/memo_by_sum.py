"""Attack 1: memoized by a digest of the inputs, the first answer kept as numpy."""
import numpy as np
import torch

def _forward(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    return W, x, b, f

_answers = {}


def graph2(W_np, x_np, b_np):
    W, x, b, f = _forward(W_np, x_np, b_np)
    (g,) = torch.autograd.grad(f, W)
    key = round(float(W_np.sum() + 3 * x_np.sum() + 7 * b_np.sum()), 12)
    return f, g, _answers.setdefault(key, g.detach().numpy().copy())
