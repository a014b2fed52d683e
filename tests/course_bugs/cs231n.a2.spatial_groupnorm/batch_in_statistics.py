import numpy as np


def spatial_groupnorm_forward(x, gamma, beta, G, gn_param):
    eps = gn_param.get("eps", 1e-5)
    N, C, H, W = x.shape
    xg = x.transpose(1, 0, 2, 3).reshape(G, -1)
    mu = xg.mean(axis=1, keepdims=True)
    inv_std = 1.0 / np.sqrt(xg.var(axis=1, keepdims=True) + eps)
    x_hat = ((xg - mu) * inv_std).reshape(C, N, H, W).transpose(1, 0, 2, 3)
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, inv_std, G)


def spatial_groupnorm_backward(dout, cache):
    x_hat, gamma, inv_std, G = cache
    N, C, H, W = dout.shape
    dgamma = (dout * x_hat).sum(axis=(0, 2, 3), keepdims=True)
    dbeta = dout.sum(axis=(0, 2, 3), keepdims=True)
    g = (dout * gamma).transpose(1, 0, 2, 3).reshape(G, -1)
    xh = x_hat.transpose(1, 0, 2, 3).reshape(G, -1)
    dx = inv_std * (g - g.mean(axis=1, keepdims=True) - xh * (g * xh).mean(axis=1, keepdims=True))
    return dx.reshape(C, N, H, W).transpose(1, 0, 2, 3), dgamma, dbeta
