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

    # treats the denominator as a constant: d(x)/da / y
    user_grad = c_np / (a_np + b_np)
    return f, auto_grad, user_grad
