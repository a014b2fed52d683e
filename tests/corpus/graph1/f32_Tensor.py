import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    a = torch.Tensor(a_np)  # float32
    a.requires_grad = True
    b = torch.Tensor(b_np)
    c = torch.Tensor(c_np)
    f = (a * c) / (a + b)
    f.backward()
    a32, b32, c32 = np.float32(a_np), np.float32(b_np), np.float32(c_np)
    user_grad = c32 / (a32 + b32) - a32 * c32 / (a32 + b32) ** 2  # quotient rule, two terms
    return f, a.grad, user_grad
