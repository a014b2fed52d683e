import numpy as np


def spatial_groupnorm_forward(x, gamma, beta, G, gn_param):
    eps = gn_param.get("eps", 1e-5)
    N, C, H, W = x.shape
    # group g taken as channels g, g + G, g + 2G, ...: strided, not contiguous
    xg = x.reshape(N, C // G, G, H * W).transpose(0, 2, 1, 3).reshape(N, G, -1)
    inv_std = 1.0 / np.sqrt(xg.var(axis=2, keepdims=True) + eps)
    x_hat = ((xg - xg.mean(axis=2, keepdims=True)) * inv_std).reshape(N, G, C // G, H * W)
    x_hat = x_hat.transpose(0, 2, 1, 3).reshape(x.shape)
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, inv_std, G)


def spatial_groupnorm_backward(dout, cache):
    x_hat, gamma, inv_std, G = cache
    N = dout.shape[0]
    dgamma = (dout * x_hat).sum(axis=(0, 2, 3), keepdims=True)
    dbeta = dout.sum(axis=(0, 2, 3), keepdims=True)
    C, H, W = dout.shape[1:]
    g = (dout * gamma).reshape(N, C // G, G, H * W).transpose(0, 2, 1, 3).reshape(N, G, -1)
    xh = x_hat.reshape(N, C // G, G, H * W).transpose(0, 2, 1, 3).reshape(N, G, -1)
    dx = inv_std * (g - g.mean(axis=2, keepdims=True) - xh * (g * xh).mean(axis=2, keepdims=True))
    dx = dx.reshape(N, G, C // G, H * W).transpose(0, 2, 1, 3)
    return dx.reshape(dout.shape), dgamma, dbeta
