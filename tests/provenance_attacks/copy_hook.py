"""A partial copy through a tensor hook: dz captured by z.register_hook, the last step by hand."""
import numpy as np
import torch

def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    z = W @ x + b
    seen = []
    z.register_hook(seen.append)
    f = torch.sigmoid(z).sum()
    f.backward()
    return f, W.grad, (seen[0] @ x.T).detach()
