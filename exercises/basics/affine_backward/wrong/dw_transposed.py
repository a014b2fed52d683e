import numpy as np


def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout @ w.T
    dw = dout.T @ x  # (M, N) @ (N, D): the transpose of d loss / dw
    db = np.sum(dout, axis=0)
    return dx, dw, db
