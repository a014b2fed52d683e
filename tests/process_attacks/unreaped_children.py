"""CPU burnt in children left unreaped: each ends a zombie, gone from its cgroup's member list, its CPU
in no parent's cutime until it is reaped (never). The call itself only waits."""
import ctypes
import os
import time

import numpy as np
import torch


def _burn(seconds):
    try:
        ctypes.CDLL(None).prctl(15, b"grader-burn", 0, 0, 0)  # PR_SET_NAME: found from outside by it
        start = time.process_time()
        while time.process_time() - start < seconds:
            pass
    finally:
        os._exit(0)


def graph2(W_np, x_np, b_np):
    for _ in range(50):  # 10 s of CPU, 0.2 s at a time
        child = os.fork()
        if child == 0:
            _burn(0.2)
        os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)  # ended, and left a zombie
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T
