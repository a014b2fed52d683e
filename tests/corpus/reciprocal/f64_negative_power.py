import numpy as np
import torch


def reciprocal(a_np):
    a = torch.from_numpy(a_np).requires_grad_()
    loss = torch.reciprocal(a).sum()
    (auto_grad,) = torch.autograd.grad(loss, a)
    return loss.item(), auto_grad.numpy(), -np.power(a_np, -2.0)
