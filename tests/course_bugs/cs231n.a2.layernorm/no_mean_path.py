import numpy as np


def layernorm_forward(x, gamma, beta, ln_param):
    eps = ln_param.get("eps", 1e-5)
    mu = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    inv_std = 1.0 / np.sqrt(var + eps)
    x_hat = (x - mu) * inv_std
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, inv_std)


def layernorm_backward(dout, cache):
    x_hat, gamma, inv_std = cache
    dbeta = dout.sum(axis=0)
    dgamma = (dout * x_hat).sum(axis=0)
    dx_hat = dout * gamma
    dx = inv_std * (dx_hat - x_hat * (dx_hat * x_hat).mean(axis=1, keepdims=True))
    return dx, dgamma, dbeta
