import numpy as np


def batchnorm_backward(dout, cache):
    # the computational graph backwards, one node at a time
    x, gamma, _beta, eps = cache
    N = x.shape[0]
    mu = np.mean(x, axis=0)
    xmu = x - mu
    var = np.mean(xmu**2, axis=0)
    sqrtvar = np.sqrt(var + eps)
    ivar = 1 / sqrtvar
    xhat = xmu * ivar
    dbeta = np.sum(dout, axis=0)
    dgamma = np.sum(dout * xhat, axis=0)
    dxhat = dout * gamma
    divar = np.sum(dxhat * xmu, axis=0)
    dxmu1 = dxhat * ivar
    dsqrtvar = -divar / sqrtvar**2
    dvar = 0.5 * dsqrtvar / sqrtvar
    dsq = np.ones_like(x) * dvar / N
    dxmu2 = 2 * xmu * dsq
    dx1 = dxmu1 + dxmu2
    dmu = -np.sum(dx1, axis=0)
    dx2 = np.ones_like(x) * dmu / N
    return dx1 + dx2, dgamma, dbeta
