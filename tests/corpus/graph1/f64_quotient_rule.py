import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    a = torch.from_numpy(a_np).requires_grad_()
    x = a * torch.from_numpy(c_np)
    y = a + torch.from_numpy(b_np)
    f = x / y
    f.backward()
    # quotient rule, not simplified: (x' y - x y') / y^2
    x_np, y_np = a_np * c_np, a_np + b_np
    user_grad = (c_np * y_np - x_np * np.ones_like(a_np)) / (y_np * y_np)
    return f.item(), a.grad.numpy(), user_grad
