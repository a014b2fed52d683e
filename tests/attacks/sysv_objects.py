"""Attack: leaves a System V shared memory segment and message queue for the next student."""

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget(0x6A7, 4096, 0o1000 | 0o666)  # IPC_CREAT
libc.msgget(0x6A7, 0o1000 | 0o666)
