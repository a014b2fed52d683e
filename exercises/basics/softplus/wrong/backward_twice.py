import numpy as np
import torch


def softplus(x_np):
    x = torch.tensor(x_np, requires_grad=True)
    loss = torch.logaddexp(x, torch.zeros_like(x)).sum()
    loss.backward(retain_graph=True)
    loss.backward(retain_graph=True)  # the second call adds the gradient again into x.grad
    auto_grad = x.grad

    user_grad = 1 / (1 + np.exp(-x_np))
    return loss, auto_grad, user_grad
