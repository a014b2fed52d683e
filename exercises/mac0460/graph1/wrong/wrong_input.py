import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np)
    b = torch.tensor(b_np, requires_grad=True)
    c = torch.tensor(c_np)
    x = a * c
    y = a + b
    f = x / y
    f.backward()
    auto_grad = b.grad  # the gradient with respect to the wrong input

    user_grad = -a_np * c_np / (a_np + b_np) ** 2
    return f, auto_grad, user_grad
