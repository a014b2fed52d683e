import numpy as np
import torch


def batchnorm_backward(dout, cache):
    x_np, gamma, _beta, eps = cache
    inv_std = 1 / np.sqrt(x_np.var(axis=0) + eps)
    xhat = (x_np - x_np.mean(axis=0)) * inv_std
    x = torch.tensor(x_np, dtype=torch.float32, requires_grad=True)
    out = torch.tensor(gamma, dtype=torch.float32) * torch.nn.functional.batch_norm(
        x, None, None, training=True, eps=float(eps)
    )
    (dx,) = torch.autograd.grad(out, x, torch.tensor(dout, dtype=torch.float32))  # dx from autograd
    return dx.numpy(), (dout * xhat).sum(0), dout.sum(0)  # the others by hand
