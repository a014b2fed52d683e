import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np).float().requires_grad_()
    f = torch.sigmoid(W @ torch.tensor(x_np).float() + torch.tensor(b_np).float()).sum()
    f.backward()
    u = W_np.astype(np.float32) @ x_np.astype(np.float32) + b_np.astype(np.float32)
    s = 1 / (1 + np.exp(-u))
    user_grad = (s * (1 - s)) @ x_np.astype(np.float32).T
    return f.double(), W.grad.double(), user_grad.astype(np.float64)
