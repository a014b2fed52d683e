import numpy as np


def spatial_groupnorm_forward(x, gamma, beta, G, gn_param):
    eps = gn_param.get("eps", 1e-5)
    N, C, H, W = x.shape
    xg = x.reshape(N, C, -1)
    inv_std = 1.0 / np.sqrt(xg.var(axis=2, keepdims=True) + eps)
    x_hat = ((xg - xg.mean(axis=2, keepdims=True)) * inv_std).reshape(x.shape)
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, inv_std, G)


def spatial_groupnorm_backward(dout, cache):
    x_hat, gamma, inv_std, G = cache
    N = dout.shape[0]
    dgamma = (dout * x_hat).sum(axis=(0, 2, 3), keepdims=True)
    dbeta = dout.sum(axis=(0, 2, 3), keepdims=True)
    g = (dout * gamma).reshape(N, inv_std.shape[1], -1)
    xh = x_hat.reshape(N, inv_std.shape[1], -1)
    dx = inv_std * (g - g.mean(axis=2, keepdims=True) - xh * (g * xh).mean(axis=2, keepdims=True))
    return dx.reshape(dout.shape), dgamma, dbeta
