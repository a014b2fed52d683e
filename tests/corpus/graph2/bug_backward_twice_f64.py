import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x = torch.tensor(x_np)
    b = torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward(retain_graph=True)
    f.backward()  # W.grad accumulates: 2 * df/dW
    W_, x_, b_ = W_np, x_np, b_np
    s = 1 / (1 + np.exp(-(W_ @ x_ + b_)))
    return f, W.grad, (s * (1 - s)) @ x_.T
