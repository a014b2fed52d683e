import numpy as np


def batchnorm_forward(x, gamma, beta, bn_param):
    eps = bn_param["eps"]
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    inv_std = 1.0 / np.sqrt(var + eps)
    x_hat = (x - mu) * inv_std
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, inv_std)


def batchnorm_backward_alt(dout, cache):
    x_hat, gamma, inv_std = cache
    dbeta = dout.sum(axis=0)
    dgamma = (dout * x_hat).sum(axis=0)
    dx_hat = dout * gamma
    dx = inv_std * (dx_hat - x_hat * (dx_hat * x_hat).mean(axis=0))
    return dx, dgamma, dbeta


def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    N, C, H, W = x.shape
    rows = x.transpose(0, 2, 3, 1).reshape(-1, C)
    out, cache = batchnorm_forward(rows, gamma, beta, bn_param)
    return out.reshape(N, H, W, C).transpose(0, 3, 1, 2), cache


def spatial_batchnorm_backward(dout, cache):
    N, C, H, W = dout.shape
    dx, dgamma, dbeta = batchnorm_backward_alt(dout.transpose(0, 2, 3, 1).reshape(-1, C), cache)
    return dx.reshape(N, H, W, C).transpose(0, 3, 1, 2), dgamma, dbeta
