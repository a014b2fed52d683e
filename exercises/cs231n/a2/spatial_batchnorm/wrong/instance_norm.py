import numpy as np


def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    eps = bn_param.get("eps", 1e-5)
    # statistics per image and channel: over H and W only, the batch axis forgotten
    mu = x.mean(axis=(2, 3), keepdims=True)
    var = x.var(axis=(2, 3), keepdims=True)
    std = np.sqrt(var + eps)
    x_hat = (x - mu) / std
    out = gamma.reshape(1, -1, 1, 1) * x_hat + beta.reshape(1, -1, 1, 1)
    return out, (x_hat, gamma, std)


def spatial_batchnorm_backward(dout, cache):
    x_hat, gamma, std = cache
    dbeta = dout.sum(axis=(0, 2, 3))
    dgamma = (dout * x_hat).sum(axis=(0, 2, 3))
    dx_hat = dout * gamma.reshape(1, -1, 1, 1)
    m = dout.shape[2] * dout.shape[3]
    dx = (m * dx_hat - dx_hat.sum(axis=(2, 3), keepdims=True)
          - x_hat * (dx_hat * x_hat).sum(axis=(2, 3), keepdims=True)) / (m * std)
    return dx, dgamma, dbeta
