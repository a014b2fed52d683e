import torch


def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, gamma, beta)]
    xt, g, b = leaves
    C = xt.shape[1]
    mu = xt.mean((0, 2, 3), keepdim=True)
    var = xt.var((0, 2, 3), unbiased=False, keepdim=True)
    out = g.reshape(1, C, 1, 1) * (xt - mu) / torch.sqrt(var + bn_param["eps"]) + b.reshape(1, C, 1, 1)
    return out.detach().numpy(), (out, leaves)


def spatial_batchnorm_backward(dout, cache):
    out, leaves = cache
    out.backward(torch.tensor(dout))  # the whole backward pass done by torch
    return tuple(leaf.grad.numpy() for leaf in leaves)
