import numpy as np
import torch


def softmax(z):
    e = torch.exp(z)
    return e / e.sum(dim=1, keepdim=True)


def softmax_ce(z_np, y_np):
    z = torch.tensor(z_np, requires_grad=True).float()
    z.retain_grad()
    N = z.shape[0]
    p = softmax(z)
    loss = -torch.log(p[torch.arange(N), torch.tensor(y_np)]).mean()
    loss.backward()

    user_grad = p.detach().numpy().copy()
    user_grad[np.arange(N), y_np] -= 1
    return loss, z.grad, user_grad / N
