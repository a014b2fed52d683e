import numpy as np


def batchnorm_backward(dout, cache):
    x, gamma, beta, eps = cache
    N = x.shape[0]
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    inv_std = 1.0 / np.sqrt(var + eps)
    x_hat = (x - mu) * inv_std

    dbeta = dout.sum(axis=0)
    dgamma = (dout * x_hat).sum(axis=0)
    dx_hat = dout * gamma
    dx = inv_std / N * (N * dx_hat - x_hat * (dx_hat * x_hat).sum(axis=0))
    return dx, dgamma, dbeta
