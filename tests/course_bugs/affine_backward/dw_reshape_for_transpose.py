import numpy as np


def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout @ w.T
    dw = x.reshape(x.shape[1], x.shape[0]) @ dout
    db = np.sum(dout, axis=0)
    return dx, dw, db
