import numpy as np
import torch


def softplus(x_np):
    x = torch.tensor(x_np, requires_grad=True)  # float64, like x_np
    # log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): exp only ever sees numbers <= 0
    loss = (torch.clamp(x, min=0) + torch.log1p(torch.exp(-torch.abs(x)))).sum()
    loss.backward()
    auto_grad = x.grad

    user_grad = 1.0 / (1.0 + np.exp(-x_np))  # sigmoid(x); exp(-x) <= e^20 on these inputs
    return loss, auto_grad, user_grad
