import torch


def graph2(W_np, x_np, b_np):
    W = torch.FloatTensor(W_np).requires_grad_()
    x = torch.FloatTensor(x_np)
    b = torch.FloatTensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward()
    with torch.no_grad():
        s = torch.sigmoid(W @ x + b)
        user_grad = torch.outer((s * (1 - s)).flatten(), x.flatten()).numpy()
    return f, W.grad, user_grad
