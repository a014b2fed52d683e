import numpy as np


def batchnorm_backward(dout, cache):
    x, gamma, beta, eps = cache
    N = x.shape[0]
    mu = x.mean(axis=0)
    xmu = x - mu
    var = np.mean(xmu**2, axis=0)
    inv_std = (var + eps) ** -0.5
    xhat = xmu * inv_std

    dbeta = dout.sum(axis=0)
    dgamma = (dout * xhat).sum(axis=0)
    dxhat = dout * gamma
    dvar = np.sum(dxhat * xmu, axis=0) * -0.5 * (var + eps) ** -0.5  # power not lowered: should be -1.5
    dmu = np.sum(-dxhat * inv_std, axis=0) + dvar * np.mean(-2.0 * xmu, axis=0)
    dx = dxhat * inv_std + dvar * 2.0 * xmu / N + dmu / N
    return dx, dgamma, dbeta
