"""os.fork at import, the child carrying on as the worker (it holds the same pipes) while the parent
waits: everything after runs in a process the worker never set up itself."""
import os

import numpy as np
import torch

if os.fork() != 0:
    os.wait()
    os._exit(0)


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T
