"""Attack: forward mode through the aten operators themselves (torch.ops.aten._make_dual and _unpack_dual,
by overload and by packet), a level entered from torch._C."""
import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward()
    g = torch.zeros_like(W.detach())
    level = torch._C._enter_dual_level()
    try:
        for i in range(W.shape[0]):
            for j in range(W.shape[1]):
                e = torch.zeros_like(g)
                e[i, j] = 1.0
                dual = torch.ops.aten._make_dual.default(W.detach(), e, level)
                out = torch.sigmoid(dual @ x + b).sum()
                g[i, j] = torch.ops.aten._unpack_dual(out, level)[1]
    finally:
        torch._C._exit_dual_level(level=level)
    return f, W.grad, g
