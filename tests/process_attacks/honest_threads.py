"""Honest: threads (threading, numpy's BLAS, torch's intra-op pool) are one process and stay allowed."""
import threading

import numpy as np
import torch

torch.set_num_threads(2)


def graph2(W_np, x_np, b_np):
    big = np.random.default_rng(0).random((300, 300))
    assert (big @ big).shape == (300, 300)
    results = {}

    def by_hand():
        s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
        results["user"] = (s * (1 - s)) @ x_np.T

    thread = threading.Thread(target=by_hand)
    thread.start()
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    thread.join()
    return f, W.grad, results["user"]
