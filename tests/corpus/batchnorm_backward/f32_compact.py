import numpy as np


def batchnorm_backward(dout, cache):
    x, gamma, _beta, eps = (np.asarray(a).astype(np.float32) for a in cache)
    dout = dout.astype(np.float32)
    N = x.shape[0]
    inv_std = 1 / np.sqrt(x.var(axis=0) + eps)
    xhat = (x - x.mean(axis=0)) * inv_std
    dxhat = dout * gamma
    dx = inv_std / N * (N * dxhat - dxhat.sum(0) - xhat * (dxhat * xhat).sum(0))
    return dx, (dout * xhat).sum(0), dout.sum(0)
