import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np, requires_grad=True)
    b = torch.tensor(b_np)
    c = torch.tensor(c_np)
    x = a * c
    y = a + b
    f = x / y
    f.backward()
    auto_grad = a.grad

    # d(1/y)/dy = -1/y^2 ... and the minus sign was carried to the end
    user_grad = -b_np * c_np / (a_np + b_np) ** 2
    return f, auto_grad, user_grad
