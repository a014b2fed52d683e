import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)
    loss = torch.sum(torch.reciprocal(a))
    loss.backward()
    auto_grad = a.grad
    user_grad = -1.0 / (a_np * a_np)
    return loss, auto_grad, user_grad
