"""The gradient computed in a multiprocessing pool's worker."""
import multiprocessing

import numpy as np
import torch


def _grad(args):
    W_np, x_np, b_np = args
    W = torch.tensor(W_np, requires_grad=True)
    torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum().backward()
    return W.grad.numpy()


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        user = pool.map(_grad, [(W_np, x_np, b_np)])[0]
    return f, W.grad, user
