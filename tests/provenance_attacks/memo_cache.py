"""Attack 1: answers memoized per input; a rerun of an input seen before gets the first answer."""
import numpy as np
import torch

def _forward(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    return W, x, b, f

_seen = {}


def graph2(W_np, x_np, b_np):
    key = (W_np.tobytes(), x_np.tobytes(), b_np.tobytes())
    W, x, b, f = _forward(W_np, x_np, b_np)
    f.backward()
    if key not in _seen:
        _seen[key] = W.grad.clone()
    return f, W.grad, _seen[key]
