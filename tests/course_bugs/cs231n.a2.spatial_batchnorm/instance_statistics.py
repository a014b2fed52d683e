import numpy as np


def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    eps = bn_param["eps"]
    mu = x.mean(axis=(2, 3), keepdims=True)
    var = x.var(axis=(2, 3), keepdims=True)
    inv_std = 1.0 / np.sqrt(var + eps)
    x_hat = (x - mu) * inv_std
    out = gamma.reshape(1, -1, 1, 1) * x_hat + beta.reshape(1, -1, 1, 1)
    return out, (x_hat, gamma, inv_std)


def spatial_batchnorm_backward(dout, cache):
    x_hat, gamma, inv_std = cache
    dbeta = dout.sum(axis=(0, 2, 3))
    dgamma = (dout * x_hat).sum(axis=(0, 2, 3))
    dx_hat = dout * gamma.reshape(1, -1, 1, 1)
    dx = inv_std * (dx_hat - dx_hat.mean(axis=(2, 3), keepdims=True)
                    - x_hat * (dx_hat * x_hat).mean(axis=(2, 3), keepdims=True))
    return dx, dgamma, dbeta
