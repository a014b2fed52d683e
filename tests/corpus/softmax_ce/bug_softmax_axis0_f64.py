import numpy as np
import torch


def softmax_ce(z_np, y_np):
    z = torch.tensor(z_np, requires_grad=True)
    N = z_np.shape[0]
    loss = -torch.log_softmax(z, dim=1)[torch.arange(N), torch.tensor(y_np)].mean()
    loss.backward()

    zz = z_np
    p = np.exp(zz - zz.max(axis=0, keepdims=True))
    p /= p.sum(axis=0, keepdims=True)  # normalised over the examples, not the classes
    p[np.arange(N), y_np] -= 1
    return loss, z.grad, p / N
