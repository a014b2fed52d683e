"""A double fork at import: grandchildren, orphaned at once and in sessions of their own, do each call's
work (10 s of CPU, then the right answer) while the call itself only waits for them. Their CPU is the
hand-in's: the call must meet its deadline all the same, and nothing of them may outlive the run."""
import ctypes
import os
import time

import numpy as np
import torch

_requests, _to_helper = os.pipe()
_from_helper, _answers = os.pipe()
middle = os.fork()
if middle == 0:
    if os.fork() == 0:
        try:
            os.setsid()
            ctypes.CDLL(None).prctl(15, b"grader-burn", 0, 0, 0)  # PR_SET_NAME: found from outside by it
            while os.read(_requests, 1):
                start = time.process_time()
                while time.process_time() - start < 10:
                    pass
                os.write(_answers, b"x")
        finally:
            os._exit(0)
    os._exit(0)
os.waitpid(middle, 0)


def graph2(W_np, x_np, b_np):
    os.write(_to_helper, b"x")
    os.read(_from_helper, 1)
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T
