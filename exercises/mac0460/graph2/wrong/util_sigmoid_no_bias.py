import torch.nn.functional as F
import numpy as np
import torch
from util import randomize_in_place, sigmoid  # noqa: F401


def graph2(W_np, x_np, b_np):
    W = torch.from_numpy(W_np)
    x = torch.from_numpy(x_np)
    b = torch.from_numpy(b_np)
    W.requires_grad = True
    u = torch.matmul(W, x) + b
    g = torch.sigmoid(u)
    f = torch.sum(g)
    f.backward()
    auto_grad = W.grad

    # df/dW = sigma'(u) x^T, but u written without its b
    s = sigmoid(np.matmul(W_np, x_np))
    user_grad = np.matmul(s * (1 - s), x_np.T)
    return f, auto_grad, user_grad
