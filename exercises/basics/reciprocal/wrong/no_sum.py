import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)
    loss = 1 / a  # forgot the sum: a vector, not a scalar loss
    loss.backward(torch.ones_like(loss))  # "grad can be implicitly created only for scalar outputs" worked around
    auto_grad = a.grad

    user_grad = -1 / a_np**2
    return loss, auto_grad, user_grad
