import numpy as np


def batchnorm_forward(x, gamma, beta, bn_param):
    eps = bn_param["eps"]
    N, D = x.shape
    mu = 1.0 / N * np.sum(x, axis=0)
    xmu = x - mu
    sq = xmu ** 2
    var = 1.0 / N * np.sum(sq, axis=0)
    sqrtvar = np.sqrt(var + eps)
    ivar = 1.0 / sqrtvar
    xhat = xmu * ivar
    out = gamma * xhat + beta
    return out, (xhat, gamma, xmu, ivar, sqrtvar, var, eps)


def batchnorm_backward(dout, cache):
    xhat, gamma, xmu, ivar, sqrtvar, var, eps = cache
    N, D = dout.shape
    dbeta = np.sum(dout, axis=0)
    dgamma = np.sum(dout * xhat, axis=0)
    dxhat = dout * gamma
    dxmu1 = dxhat * ivar
    dx1 = dxmu1
    dmu = -1 * np.sum(dxmu1, axis=0)
    dx2 = 1.0 / N * np.ones((N, D)) * dmu
    dx = dx1 + dx2
    return dx, dgamma, dbeta
