"""The complex step for every entry at once: a batch of perturbed copies in one expression."""
import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    d, n = W_np.shape
    h = 1e-20
    batch = W_np[None] + 1j * h * np.eye(d * n).reshape(d * n, d, n)
    user_grad = (1.0 / (1.0 + np.exp(-(batch @ x_np + b_np)))).sum(axis=(1, 2)).imag.reshape(d, n) / h
    return f, W.grad, user_grad
