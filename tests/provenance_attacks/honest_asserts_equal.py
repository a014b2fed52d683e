"""Not an attack: a correct hand derivation that asserts, inside the function, that autograd agrees with it
(as the course's own check loop does outside it). On a checked trial autograd's values are changed on
purpose, the assertion fails there, and the by-hand return, whose check could not run, earns nothing;
f and auto_grad keep their points, and the message says which trial was a check and why."""
import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    user_grad = (s * (1 - s)) @ x_np.T
    assert np.allclose(W.grad.numpy(), user_grad), "autograd and my derivation disagree"
    return f, W.grad, user_grad
