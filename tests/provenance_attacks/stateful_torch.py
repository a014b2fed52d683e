"""Case 8: a correct hand derivation in torch operations (torch.sigmoid, F.logsigmoid) that keeps the last
gradient it gave and counts its calls."""
import numpy as np
import torch

import torch.nn.functional as F
_last = []


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    u = W @ x + b
    f = torch.sigmoid(u).sum()
    f.backward()
    with torch.no_grad():
        s = torch.exp(F.logsigmoid(u))
        user_grad = (torch.sigmoid(u) * (1 - s)) @ x.T
    _last.append(user_grad)
    return f, W.grad, _last[-1]
