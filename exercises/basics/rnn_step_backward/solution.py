import numpy as np


def rnn_step_backward(dnext_h, cache):
    x, prev_h, Wx, Wh, b = cache
    a = x @ Wx + prev_h @ Wh + b  # (N, H), recomputed from the cache
    next_h = np.tanh(a)
    da = dnext_h * (1 - next_h**2)  # back through the tanh: tanh'(a) = 1 - tanh(a)**2, elementwise
    dx = da @ Wx.T  # (N, H) @ (H, D)
    dprev_h = da @ Wh.T  # (N, H) @ (H, H): Wh is square, the transpose still matters
    dWx = x.T @ da  # (D, N) @ (N, H)
    dWh = prev_h.T @ da  # (H, N) @ (N, H): the state that went in, not next_h
    db = np.sum(da, axis=0)  # b is added to every row: sum over the examples
    return dx, dprev_h, dWx, dWh, db
