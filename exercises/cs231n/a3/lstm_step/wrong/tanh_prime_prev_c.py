import numpy as np


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    H = prev_h.shape[1]
    a = x @ Wx + prev_h @ Wh + b
    i = _sigmoid(a[:, :H])
    f = _sigmoid(a[:, H:2 * H])
    o = _sigmoid(a[:, 2 * H:3 * H])
    g = np.tanh(a[:, 3 * H:])
    next_c = f * prev_c + i * g
    tc = np.tanh(next_c)
    next_h = o * tc
    return next_h, next_c, (x, prev_h, prev_c, Wx, Wh, i, f, o, g, tc)


def lstm_step_backward(dnext_h, dnext_c, cache):
    x, prev_h, prev_c, Wx, Wh, i, f, o, g, tc = cache
    # tanh' at the cell state that came in: the cache holds prev_c, and tanh(prev_c) looked like it
    dc = dnext_c + dnext_h * o * (1.0 - np.tanh(prev_c) ** 2)
    di = dc * g
    df = dc * prev_c
    do = dnext_h * tc
    dg = dc * i
    da = np.concatenate(
        [di * i * (1.0 - i), df * f * (1.0 - f), do * o * (1.0 - o), dg * (1.0 - g * g)], axis=1
    )
    dprev_c = dc * f
    return da @ Wx.T, da @ Wh.T, dprev_c, x.T @ da, prev_h.T @ da, da.sum(axis=0)
