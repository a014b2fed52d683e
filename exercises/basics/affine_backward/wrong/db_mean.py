import numpy as np


def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout @ w.T
    dw = x.T @ dout
    db = np.mean(dout, axis=0)  # mean over the batch instead of the sum
    return dx, dw, db
