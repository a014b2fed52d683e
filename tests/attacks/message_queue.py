"""Attack: leaves a POSIX message queue holding a message for the next student."""

import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T

import ctypes, os
try:
    rt = ctypes.CDLL("librt.so.1", use_errno=True)
    rt.mq_open.restype = ctypes.c_int
    q = rt.mq_open(b"/grader-attack-queue", os.O_CREAT | os.O_RDWR, 0o666, None)
    if q >= 0:
        rt.mq_send(q, b"LEAKED-ANSWER", 13, 0)
except OSError:
    pass
