import numpy as np


def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout @ w.T  # (N, M) @ (M, D): d out[i, j] / d x[i, k] = w[k, j]
    dw = x.T @ dout  # (D, N) @ (N, M): every example contributes x[i, k] * dout[i, j]
    db = np.sum(dout, axis=0)  # b is added to every row: sum the rows' upstream gradients
    return dx, dw, db
