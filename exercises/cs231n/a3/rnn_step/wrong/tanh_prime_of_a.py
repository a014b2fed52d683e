import numpy as np


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    a = x @ Wx + prev_h @ Wh + b
    return np.tanh(a), (x, prev_h, Wx, Wh, a)


def rnn_step_backward(dnext_h, cache):
    x, prev_h, Wx, Wh, a = cache
    da = dnext_h * (1.0 - a * a)
    return da @ Wx.T, da @ Wh.T, x.T @ da, prev_h.T @ da, da.sum(axis=0)
