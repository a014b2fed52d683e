import numpy as np


def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    eps = bn_param["eps"]
    C = x.shape[1]
    g = gamma.reshape(1, C, 1, 1)
    mu = x.mean(axis=0, keepdims=True)  # one mean per (c, h, w), over the batch only
    var = x.var(axis=0, keepdims=True)
    inv_std = 1.0 / np.sqrt(var + eps)
    x_hat = (x - mu) * inv_std
    return g * x_hat + beta.reshape(1, C, 1, 1), (x_hat, g, inv_std)


def spatial_batchnorm_backward(dout, cache):
    x_hat, g, inv_std = cache
    dbeta = dout.sum(axis=(0, 2, 3))
    dgamma = (dout * x_hat).sum(axis=(0, 2, 3))
    dx_hat = dout * g
    dx = inv_std * (
        dx_hat - dx_hat.mean(axis=0, keepdims=True) - x_hat * (dx_hat * x_hat).mean(axis=0, keepdims=True)
    )
    return dx, dgamma, dbeta
