import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)  # float64, like a_np
    loss = torch.sum(1 / a)
    loss.backward()
    auto_grad = a.grad

    user_grad = -1 / a_np**2  # d(1/a)/da = -1/a^2, entry by entry
    return loss, auto_grad, user_grad
