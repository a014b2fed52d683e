import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, dtype=torch.float32, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    auto_grad = a.grad
    user_grad = -1 / a_np**2  # numpy, float64
    return loss, auto_grad, user_grad
