"""Attack 5/6: the check noticed (a probe's gradient is not 1), and there a value near the right one
(autograd's, with the probe's factor divided out, and 0.1% off): within 1/8 of a copy's usual miss."""
import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    p = torch.ones((), dtype=torch.float64, requires_grad=True)
    (3 * p).backward()
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    if float(p.grad) == 3.0:
        return f, W.grad, W.grad.clone()
    s = 1 / (1 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T * 1.001
