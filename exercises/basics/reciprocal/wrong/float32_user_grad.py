import numpy as np
import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    auto_grad = a.grad

    a32 = a_np.astype(np.float32)  # "float32 is what the GPU uses anyway"
    user_grad = -1 / a32**2
    return loss, auto_grad, user_grad
