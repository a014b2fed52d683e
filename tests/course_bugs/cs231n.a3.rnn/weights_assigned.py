import numpy as np


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    next_h = np.tanh(x @ Wx + prev_h @ Wh + b)
    return next_h, (x, prev_h, Wx, Wh, next_h)


def rnn_step_backward(dnext_h, cache):
    x, prev_h, Wx, Wh, next_h = cache
    da = dnext_h * (1.0 - next_h * next_h)
    return da @ Wx.T, da @ Wh.T, x.T @ da, prev_h.T @ da, da.sum(axis=0)


def rnn_forward(x, h0, Wx, Wh, b):
    N, T, _ = x.shape
    h = np.zeros((N, T, h0.shape[1]))
    steps = []
    prev = h0
    for t in range(T):
        prev, step = rnn_step_forward(x[:, t, :], prev, Wx, Wh, b)
        h[:, t, :] = prev
        steps.append(step)
    return h, steps


def rnn_backward(dh, cache):
    steps = cache
    N, T, _ = dh.shape
    D = steps[0][0].shape[1]
    dx = np.zeros((N, T, D))
    dWx = np.zeros_like(steps[0][2])
    dWh = np.zeros_like(steps[0][3])
    db = np.zeros(dh.shape[2])
    dprev = np.zeros((N, dh.shape[2]))
    for t in reversed(range(T)):
        dx[:, t, :], dprev, dWx_t, dWh_t, db_t = rnn_step_backward(dh[:, t, :] + dprev, steps[t])
        dWx = dWx_t
        dWh = dWh_t
        db = db_t
    return dx, dprev, dWx, dWh, db
