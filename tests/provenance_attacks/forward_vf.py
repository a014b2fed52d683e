"""Attack: forward mode through torch._VF's functions, as torch/autograd/forward_ad.py calls them, below
the public make_dual / unpack_dual."""
import numpy as np
import torch

import torch.autograd.forward_ad as fwAD


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward()
    g = torch.zeros_like(W.detach())
    with fwAD.dual_level():
        for i in range(W.shape[0]):
            for j in range(W.shape[1]):
                e = torch.zeros_like(g)
                e[i, j] = 1.0
                dual = torch._VF._make_dual(W.detach(), e, level=0)
                g[i, j] = torch._VF._unpack_dual(torch.sigmoid(dual @ x + b).sum(), level=0)[1]
    return f, W.grad, g
