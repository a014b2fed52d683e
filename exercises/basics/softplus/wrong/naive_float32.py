import numpy as np
import torch


def softplus(x_np):
    x = torch.tensor(x_np, dtype=torch.float32, requires_grad=True)
    loss = torch.log(1 + torch.exp(x)).sum()  # exp(89) is already inf in float32
    loss.backward()
    auto_grad = x.grad

    x32 = x_np.astype(np.float32)
    user_grad = np.exp(x32) / (1 + np.exp(x32))
    return loss, auto_grad, user_grad
