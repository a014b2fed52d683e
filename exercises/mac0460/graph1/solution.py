import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np, requires_grad=True)  # float64, like a_np
    b = torch.tensor(b_np)
    c = torch.tensor(c_np)
    x = a * c
    y = a + b
    f = x / y
    f.backward()
    auto_grad = a.grad

    # quotient rule: d/da (a c / (a + b)) = (c (a + b) - a c) / (a + b)^2 = b c / (a + b)^2
    user_grad = b_np * c_np / (a_np + b_np) ** 2
    return f, auto_grad, user_grad
