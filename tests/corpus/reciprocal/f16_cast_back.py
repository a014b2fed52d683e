import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np).half().requires_grad_()
    loss = torch.sum(1 / a)
    loss.backward()
    r = 1 / a_np.astype(np.float16)
    return loss.double(), a.grad.double(), (-(r * r)).astype(np.float64)
