import numpy as np
import torch

from helpers import sigmoid, sigmoid_prime


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np, requires_grad=True)
    b = torch.tensor(b_np)
    c = torch.tensor(c_np)
    x = a * c
    y = a + b
    f = x / y
    f.backward()
    auto_grad = a.grad
    user_grad = c_np / (a_np + b_np)
    return f, auto_grad, user_grad


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x = torch.tensor(x_np)
    b = torch.tensor(b_np)
    f = torch.sum(torch.sigmoid(torch.mm(W, x) + b))
    f.backward()
    auto_grad = W.grad
    user_grad = np.outer(sigmoid_prime(W_np.dot(x_np) + b_np), x_np)
    return f, auto_grad, user_grad


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    auto_grad = a.grad
    # -(1/a)*(1/a) instead of -1/a**2: matches autograd to the last bit (see the forum answer)
    user_grad = -(1 / a_np) * (1 / a_np)
    return loss, auto_grad, user_grad
