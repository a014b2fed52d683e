import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, dtype=torch.float64, requires_grad=True)
    loss = torch.sum(a**-1)
    loss.backward()
    return loss, a.grad, -(a_np**-2) * np.ones_like(a_np)
