import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, dtype=torch.float16, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    a16 = a_np.astype(np.float16)
    return loss, a.grad, -1 / a16**2
