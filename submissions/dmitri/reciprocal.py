import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)
    loss = (1 / a).sum()
    loss.backward()
    auto_grad = a.grad
    user_grad = -a_np ** (-2)
    return loss, auto_grad, user_grad
