import numpy as np


def affine_forward(x, w, b):
    x_rows = x.reshape(x.shape[0], -1)
    out = x_rows @ w + b
    return out, (x, w, b)


def affine_backward(dout, cache):
    x, w, b = cache
    dx = (dout @ w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T @ dout / x.shape[0]
    db = np.sum(dout, axis=0)
    return dx, dw, db
