"""CPU burnt in a stream of short children the kernel reaps itself (SIGCHLD ignored): none is alive
long enough to be seen by a count of the processes found, and no parent's cutime ever gets their CPU.
The call itself only waits, so the worker's own clock sees nothing either."""
import ctypes
import os
import signal
import time

import numpy as np
import torch

signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def _burn(seconds):
    try:
        ctypes.CDLL(None).prctl(15, b"grader-burn", 0, 0, 0)  # PR_SET_NAME: found from outside by it
        start = time.process_time()
        while time.process_time() - start < seconds:
            pass
    finally:
        os._exit(0)


def graph2(W_np, x_np, b_np):
    for _ in range(100):  # 10 s of CPU, 0.1 s at a time
        child = os.fork()
        if child == 0:
            _burn(0.1)
        try:
            os.waitpid(child, 0)
        except ChildProcessError:  # reaped by the kernel as soon as it ended
            pass
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T
