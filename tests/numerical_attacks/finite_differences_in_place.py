"""Central differences on the input itself, moved and put back around each call."""
import numpy as np
import torch


def loss(W, x, b):
    return float(np.sum(1.0 / (1.0 + np.exp(-(W @ x + b)))))


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    grad = np.zeros_like(W_np)
    h = 1e-5
    it = np.nditer(W_np, flags=["multi_index"])
    while not it.finished:
        ix = it.multi_index
        old = W_np[ix]
        W_np[ix] = old + h
        plus = loss(W_np, x_np, b_np)
        W_np[ix] = old - h
        minus = loss(W_np, x_np, b_np)
        W_np[ix] = old
        grad[ix] = (plus - minus) / (2 * h)
        it.iternext()
    return f, W.grad, grad
