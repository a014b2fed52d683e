# Homework 3: gradients with autograd and by hand
import numpy as np
import torch


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np, requires_grad=True)
    b = torch.tensor(b_np)
    c = torch.tensor(c_np)
    x = a * c
    y = a + b
    f = x / y
    f.backward()
    auto_grad = a.grad
    # df/da = (c*y - x*1) / y^2 = b*c / (a+b)^2
    user_grad = (c_np * (a_np + b_np) - a_np * c_np) / (a_np + b_np) ** 2
    return f, auto_grad, user_grad


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x = torch.tensor(x_np)
    b = torch.tensor(b_np)
    u = torch.matmul(W, x) + b
    g = torch.sigmoid(u)
    f = torch.sum(g)
    f.backward()
    auto_grad = W.grad
    # df/dW_ij = sigmoid'(u_i) * x_j
    u_np = W_np @ x_np + b_np
    dsig = sigmoid(u_np) * (1 - sigmoid(u_np))
    user_grad = dsig @ x_np.T
    return f, auto_grad, user_grad


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    auto_grad = a.grad
    user_grad = -1 / a_np**2
    return loss, auto_grad, user_grad


def softmax_ce(z_np, y_np):
    z = torch.tensor(z_np, requires_grad=True)
    N = z_np.shape[0]
    loss = -torch.log_softmax(z, dim=1)[torch.arange(N), torch.tensor(y_np)].mean()
    loss.backward()

    p = np.exp(z_np - z_np.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(N), y_np] -= 1
    return loss, z.grad, p / N


if __name__ == "__main__":
    for i in range(100):
        size = np.random.randint(2, 10)
        W_np, x_np, b_np = np.random.rand(size, size), np.random.rand(size, 1), np.random.rand(size, 1)
        f, auto_grad, user_grad = graph2(W_np, x_np, b_np)
        assert np.allclose(auto_grad.numpy(), user_grad), "Gradient not correct"
    print("all good")
