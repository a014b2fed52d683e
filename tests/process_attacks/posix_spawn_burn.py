"""CPU burnt by a spawned child the call waits for, which a count of the worker's own CPU never sees."""
import os

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    child = os.posix_spawn("/bin/sh", ["sh", "-c", "while :; do :; done", "grader-attack-spawn-burn"], {})
    os.waitpid(child, 0)
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T
