"""Forward differences for every entry at once: a stack of copies of W, each with one entry moved."""
import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    d, n = W_np.shape
    h = 1e-7
    stack = W_np[None] + h * np.eye(d * n).reshape(d * n, d, n)
    values = (1.0 / (1.0 + np.exp(-(stack @ x_np + b_np)))).sum(axis=(1, 2))
    base = np.sum(1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np))))
    return f, W.grad, ((values - base) / h).reshape(d, n)
