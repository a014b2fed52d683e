import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np, dtype=torch.float64, requires_grad=True)
    f = torch.div(torch.mul(a, torch.tensor(c_np)), torch.add(a, torch.tensor(b_np)))
    (auto_grad,) = torch.autograd.grad(f, a)
    # f = x * (1/y): df/da = c * (1/y) - x / y^2, with x = a c and y = a + b
    y = a_np + b_np
    user_grad = c_np * (1 / y) - (a_np * c_np) * (1 / y) ** 2
    return f.detach(), auto_grad, user_grad
