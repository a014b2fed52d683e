import numpy as np


def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    eps = bn_param["eps"]
    mu = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    inv_std = 1.0 / np.sqrt(var + eps)
    x_hat = (x - mu) * inv_std
    out = gamma[None, :, None, None] * x_hat + beta[None, :, None, None]
    return out, (x_hat, gamma, inv_std)


def spatial_batchnorm_backward(dout, cache):
    x_hat, gamma, inv_std = cache
    dbeta = dout.sum(axis=(0, 2, 3))
    dgamma = (dout * x_hat).sum(axis=(0, 2, 3))
    g = dout * gamma[None, :, None, None]
    dx = inv_std * (g - g.mean(axis=(0, 2, 3), keepdims=True)
                    - x_hat * (g * x_hat).mean(axis=(0, 2, 3), keepdims=True))
    return dx, dgamma, dbeta
