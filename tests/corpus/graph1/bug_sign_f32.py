import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np, dtype=torch.float32, requires_grad=True)
    b = torch.tensor(b_np, dtype=torch.float32, requires_grad=True)
    c = torch.tensor(c_np, dtype=torch.float32)
    f = a * c / (a + b)
    f.backward()
    a_, b_, c_ = a_np.astype(np.float32), b_np.astype(np.float32), c_np.astype(np.float32)
    return f, a.grad, -b_ * c_ / (a_ + b_) ** 2  # sign flipped
