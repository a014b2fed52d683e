import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x = torch.tensor(x_np)
    b = torch.tensor(b_np)
    u = torch.matmul(W, x) + b
    f = torch.sigmoid(u).sum()
    f.backward()
    auto_grad = W.grad
    s = 1 / (1 + np.exp(-(W_np @ x_np + b_np)))
    user_grad = np.matmul(x_np, (s * (1 - s)).T)
    return f, auto_grad, user_grad
