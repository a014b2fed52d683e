import numpy as np
import torch


def softmax_ce(z_np, y_np):
    z = torch.tensor(z_np, requires_grad=True)
    N = z_np.shape[0]
    logp = torch.log_softmax(z, dim=1)
    loss = -logp[torch.arange(N), torch.tensor(y_np)].mean()
    loss.backward()

    shifted = z_np - z_np.max(axis=1, keepdims=True)
    p = np.exp(shifted)
    p /= p.sum(axis=1, keepdims=True)
    onehot = np.zeros_like(z_np)
    onehot[np.arange(N), y_np] = 1.0
    return loss, z.grad, (p - onehot) / N
