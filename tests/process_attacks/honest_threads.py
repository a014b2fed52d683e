"""Honest: threads (threading, a thread pool, numpy, torch's intra-op pool of 2) are one process and stay
allowed; each kind is checked to have really started its threads."""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

torch.set_num_threads(2)


def graph2(W_np, x_np, b_np):
    big = torch.rand(600, 600, dtype=torch.float64)
    assert (big @ big).shape == (600, 600)
    assert len(os.listdir("/proc/self/task")) >= 2, "torch's pool of 2 started no thread"
    matrix = np.random.default_rng(0).random((600, 600))
    assert (matrix @ matrix).shape == (600, 600)
    results = {}

    def by_hand():
        s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
        results["user"] = (s * (1 - s)) @ x_np.T

    thread = threading.Thread(target=by_hand)
    thread.start()
    with ThreadPoolExecutor(2) as pool:
        sums = list(pool.map(np.sum, [matrix, matrix.T]))
    assert np.isclose(sums[0], sums[1])
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    thread.join()
    return f, W.grad, results["user"]
