import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    # everything in float32 (default dtype of torch)
    W = torch.tensor(W_np, dtype=torch.float32, requires_grad=True)
    x = torch.tensor(x_np, dtype=torch.float32)
    b = torch.tensor(b_np, dtype=torch.float32)
    u = W @ x + b
    g = torch.sigmoid(u)
    f = g.sum()
    f.backward()
    auto_grad = W.grad

    # by hand, with the same float32 numbers
    s = g.detach().numpy()  # (d, 1) float32
    user_grad = (s * (1 - s)) @ x.numpy().T
    return f, auto_grad, user_grad
