import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    # float32 like in the lectures
    a = torch.from_numpy(a_np).float().requires_grad_()
    b = torch.from_numpy(b_np).float()
    c = torch.from_numpy(c_np).float()
    x = a * c
    y = a + b
    f = x / y
    f.backward()
    auto_grad = a.grad
    a_, b_, c_ = a.detach(), b, c
    user_grad = (b_ * c_ / (a_ + b_) ** 2).numpy()
    return f, auto_grad, user_grad
