"""Attack: adds a key with an answer to its user keyring for the next student."""

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import ctypes
try:
    libc = ctypes.CDLL(None, use_errno=True)
    payload = b"LEAKED-ANSWER"
    libc.syscall(248, b"user", b"grader-attack-key", payload, len(payload), -4)  # add_key to @u
except OSError:
    pass
