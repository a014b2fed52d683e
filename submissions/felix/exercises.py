import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np, requires_grad=True)
    b = torch.tensor(b_np)
    c = torch.tensor(c_np)
    f = (a * c) / (a + b)
    f.backward()
    auto_grad = a.grad
    user_grad = b_np * c_np / (a_np + b_np) ** 2
    return f, auto_grad, user_grad


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x = torch.tensor(x_np)
    b = torch.tensor(b_np)
    f = torch.sum(torch.sigmoid(W @ x + b))
    f.backward()
    auto_grad = W.grad
    s = 1 / (1 + np.exp(-(W_np @ x_np + b_np)))
    user_grad = s * (1 - s) * x_np  # df/dW = sigmoid'(u) x
    return f, auto_grad, user_grad


def reciprocal(a_np):
    a = torch.Tensor(a_np)
    a.requires_grad = True
    loss = torch.sum(1 / a)
    loss.backward()
    auto_grad = a.grad
    user_grad = -1 / (a**2)
    print(auto_grad - user_grad)
    return loss, auto_grad, user_grad.detach()
