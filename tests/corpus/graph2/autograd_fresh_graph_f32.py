import torch


def graph2(W_np, x_np, b_np):
    x, b = torch.tensor(x_np, dtype=torch.float32), torch.tensor(b_np, dtype=torch.float32)
    W = torch.tensor(W_np, dtype=torch.float32, requires_grad=True)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward()
    W2 = torch.tensor(W_np, dtype=torch.float32, requires_grad=True)  # a second graph, for "user_grad"
    (user_grad,) = torch.autograd.grad(torch.sigmoid(W2 @ x + b).sum(), W2)
    return f, W.grad, user_grad.numpy()
