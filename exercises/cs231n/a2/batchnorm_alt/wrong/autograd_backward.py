import torch


def batchnorm_forward(x, gamma, beta, bn_param):
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, gamma, beta)]
    xt, g, b = leaves
    out = g * (xt - xt.mean(0)) / torch.sqrt(xt.var(0, unbiased=False) + bn_param["eps"]) + b
    return out.detach().numpy(), (out, leaves)


def batchnorm_backward_alt(dout, cache):
    out, leaves = cache
    out.backward(torch.tensor(dout))  # the whole backward pass done by torch
    return tuple(leaf.grad.numpy() for leaf in leaves)
