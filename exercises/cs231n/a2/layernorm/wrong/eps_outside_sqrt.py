import numpy as np


def layernorm_forward(x, gamma, beta, ln_param):
    eps = ln_param.get("eps", 1e-5)
    mu = x.mean(axis=1, keepdims=True)
    std = x.std(axis=1, keepdims=True)
    x_hat = (x - mu) / (std + eps)  # eps added to the standard deviation, not to the variance
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, std, eps)


def layernorm_backward(dout, cache):
    # the exact backward of this forward: x_hat = (x - mu) / (std + eps)
    x_hat, gamma, std, eps = cache
    D = dout.shape[1]
    dbeta = dout.sum(axis=0)
    dgamma = (dout * x_hat).sum(axis=0)
    g = dout * gamma
    xc = x_hat * (std + eps)
    dx = (g - g.mean(axis=1, keepdims=True)) / (std + eps)
    dstd = -np.sum(g * xc, axis=1, keepdims=True) / (std + eps) ** 2
    dx += dstd * xc / (D * std)
    return dx, dgamma, dbeta
