import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    auto_grad = a.grad

    # gradient entry by entry
    user_grad = np.zeros_like(a_np)
    i = 0
    while i < len(a_np):
        user_grad[i] = -1 / a_np[i] ** 2
    return loss, auto_grad, user_grad
