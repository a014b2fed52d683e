import torch


def batchnorm_backward(dout, cache):
    x_np, gamma, beta, eps = cache

    def forward(x, g, b):
        return g * (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + float(eps)) + b

    inputs = tuple(torch.tensor(a) for a in (x_np, gamma, beta))
    _, grads = torch.autograd.functional.vjp(forward, inputs, torch.tensor(dout))
    return tuple(g.numpy() for g in grads)
