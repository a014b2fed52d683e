import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np, dtype=torch.float32, requires_grad=True)
    b = torch.tensor(b_np, dtype=torch.float32)
    c = torch.tensor(c_np, dtype=torch.float32)
    f = a * c / (a + b)
    f.backward()
    a32, b32, c32 = (v.astype(np.float32) for v in (a_np, b_np, c_np))
    user_grad = b32 * c32 / (a32 + b32) ** 2
    return f, a.grad, user_grad
