"""The complex step computed in a thread of the hand-in's own."""
import threading

import numpy as np
import torch


def _complex_step(W_np, x_np, b_np, out):
    for k in range(W_np.size):
        Wc = W_np.astype(np.complex128)
        Wc.flat[k] += 1e-20j
        out.flat[k] = np.sum(1.0 / (1.0 + np.exp(-(Wc @ x_np + b_np)))).imag / 1e-20


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    user_grad = np.zeros_like(W_np)
    worker = threading.Thread(target=_complex_step, args=(W_np, x_np, b_np, user_grad))
    worker.start()
    worker.join()
    return f, W.grad, user_grad
