import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, dtype=torch.float32, requires_grad=True)
    x = torch.tensor(x_np, dtype=torch.float32)
    b = torch.tensor(b_np, dtype=torch.float32)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward()
    W_, x_, b_ = W_np.astype(np.float32), x_np.astype(np.float32), b_np.astype(np.float32)
    s = 1 / (1 + np.exp(-(W_ @ x_ + b_)))
    return f, W.grad, x_ @ (s * (1 - s)).T  # the outer product the wrong way round
