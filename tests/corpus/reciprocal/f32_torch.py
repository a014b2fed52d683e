import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, dtype=torch.float32, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    a32 = a_np.astype(np.float32)
    return loss, a.grad, -1 / a32**2
