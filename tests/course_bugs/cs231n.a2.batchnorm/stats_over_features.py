import numpy as np


def batchnorm_forward(x, gamma, beta, bn_param):
    eps = bn_param["eps"]
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    inv_std = 1.0 / np.sqrt(var + eps)
    x_hat = (x - mu) * inv_std
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, inv_std)


def batchnorm_backward(dout, cache):
    x_hat, gamma, inv_std = cache
    N = dout.shape[0]
    dbeta = dout.sum(axis=0)
    dgamma = (dout * x_hat).sum(axis=0)
    dx_hat = dout * gamma
    dx = inv_std * (dx_hat - dx_hat.mean(axis=1, keepdims=True) - x_hat * (dx_hat * x_hat).mean(axis=1, keepdims=True))
    return dx, dgamma, dbeta
