import torch


def graph2(W_np, x_np, b_np):
    x, b = torch.tensor(x_np, dtype=torch.float32), torch.tensor(b_np, dtype=torch.float32)
    W = torch.tensor(W_np, dtype=torch.float32, requires_grad=True)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward()
    g, pull = torch.func.vjp(lambda w: torch.sigmoid(w @ x + b), W.detach())
    (user_grad,) = pull(torch.ones_like(g))
    return f, W.grad, user_grad
