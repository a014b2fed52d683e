"""Case 8: a correct hand derivation with state: a call counter, a running mean, a cache of the forward."""
import numpy as np
import torch

def _forward(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    return W, x, b, f

_calls = 0
_mean = None
_cache = {}


def graph2(W_np, x_np, b_np):
    global _calls, _mean
    _calls += 1
    W, x, b, f = _forward(W_np, x_np, b_np)
    f.backward()
    _mean = W.grad.mean() if _mean is None else (_mean * (_calls - 1) + W.grad.mean()) / _calls
    key = (W_np.tobytes(), x_np.tobytes(), b_np.tobytes())
    if key not in _cache:
        _cache[key] = 1 / (1 + np.exp(-(W_np @ x_np + b_np)))
    s = _cache[key]
    return f, W.grad, (s * (1 - s)) @ x_np.T
