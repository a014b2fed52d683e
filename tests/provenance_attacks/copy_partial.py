"""A partial copy: dz from autograd (z.grad), the last step by hand."""
import numpy as np
import torch

def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    z = W @ x + b
    z.retain_grad()
    f = torch.sigmoid(z).sum()
    f.backward()
    return f, W.grad, (z.grad @ x.T).detach()
