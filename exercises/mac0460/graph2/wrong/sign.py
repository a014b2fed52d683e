import numpy as np
import torch


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()

    s = sigmoid(W_np @ x_np + b_np)
    user_grad = (s * (s - 1)) @ x_np.T  # sigma' written as s * (s - 1): the sign slips
    return f, W.grad, user_grad
