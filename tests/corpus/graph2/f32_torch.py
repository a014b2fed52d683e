import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, dtype=torch.float32, requires_grad=True)
    x = torch.tensor(x_np, dtype=torch.float32)
    b = torch.tensor(b_np, dtype=torch.float32)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward()
    W32, x32, b32 = W_np.astype(np.float32), x_np.astype(np.float32), b_np.astype(np.float32)
    s = 1 / (1 + np.exp(-(W32 @ x32 + b32)))
    return f, W.grad, (s * (1 - s)) @ x32.T
