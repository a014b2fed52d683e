import numpy as np


def layernorm_forward(x, gamma, beta, ln_param):
    eps = ln_param.get("eps", 1e-5)
    xt = x.T
    mu = xt.mean(axis=0)
    var = xt.var(axis=0)
    xhat = ((xt - mu) / np.sqrt(var + eps)).T
    out = gamma * xhat + beta
    return out, (xhat, gamma, var, eps)


def layernorm_backward(dout, cache):
    xhat, gamma, var, eps = cache
    D = dout.shape[1]
    dgamma = np.sum(dout * xhat, axis=0)
    dbeta = np.sum(dout, axis=0)
    dxhat = (dout * gamma).T
    xh = xhat.T
    dx = (1.0 / D) / np.sqrt(var + eps) * (D * dxhat - dxhat.sum(axis=0) - xh * (dxhat * xh).sum(axis=0))
    return dx.T, dgamma, dbeta
