import numpy as np
import torch


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x = torch.tensor(x_np)
    b = torch.tensor(b_np)
    u = torch.matmul(W, x) + b
    g = torch.sigmoid(u)
    f = torch.sum(g)
    f.backward()
    auto_grad = W.grad

    s = sigmoid(W_np * x_np + b_np)  # elementwise: (d, d) by broadcasting, not W @ x
    user_grad = (s * (1 - s)) * x_np.T
    return f, auto_grad, user_grad
