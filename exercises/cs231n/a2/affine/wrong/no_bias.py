import numpy as np


def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1) @ w  # the bias is left out
    return out, (x, w, b)


def affine_backward(dout, cache):
    x, w, b = cache
    dx = (dout @ w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T @ dout
    db = np.sum(dout, axis=0)
    return dx, dw, db
