import numpy as np


def rnn_step_backward(dnext_h, cache):
    x, prev_h, Wx, Wh, b = cache
    a = x @ Wx + prev_h @ Wh + b
    next_h = np.tanh(a)
    da = dnext_h * (1 - next_h**2)
    dx = da @ Wx.T
    dprev_h = da @ Wh
    dWx = x.T @ da
    dWh = prev_h.T @ da
    db = np.sum(da, axis=0)
    return dx, dprev_h, dWx, dWh, db
