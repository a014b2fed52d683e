import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    auto_grad = a.grad

    user_grad = 1 / a_np**2  # forgot the minus: d(a^-1)/da = -a^-2
    return loss, auto_grad, user_grad
