"""Attack: one backward formula applied by calling a grad_fn node directly (the sigmoid's), the rest of the
chain rule by hand: never through the engine's run_backward."""
import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x = torch.tensor(x_np)
    u = (W @ x + torch.tensor(b_np)).detach().requires_grad_()
    s = torch.sigmoid(u)
    f = torch.sigmoid(W @ x + torch.tensor(b_np)).sum()
    f.backward()
    du = s.grad_fn(torch.ones_like(s))  # SigmoidBackward0: ds/du, from the saved result
    return f, W.grad, (du.detach() @ x.T).numpy().copy()
