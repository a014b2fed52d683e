import numpy as np


def affine_backward(dout, cache):
    x, w, b = cache
    N = x.shape[0]
    dx = dout @ w.T
    dw = x.T @ dout / N  # "average over the batch": the loss's 1/N is already inside dout
    db = np.sum(dout, axis=0)
    return dx, dw, db
