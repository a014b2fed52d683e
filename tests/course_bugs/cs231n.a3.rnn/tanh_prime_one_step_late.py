import numpy as np


def rnn_forward(x, h0, Wx, Wh, b):
    N, T, D = x.shape
    H = h0.shape[1]
    h = np.zeros((N, T, H))
    prev = h0
    for t in range(T):
        prev = np.tanh(x[:, t, :].dot(Wx) + prev.dot(Wh) + b)
        h[:, t, :] = prev
    return h, (x, h0, Wx, Wh, h)


def rnn_backward(dh, cache):
    x, h0, Wx, Wh, h = cache
    N, T, H = dh.shape
    dx = np.zeros_like(x)
    dWx = np.zeros_like(Wx)
    dWh = np.zeros_like(Wh)
    db = np.zeros(H)
    dprev = np.zeros((N, H))
    for t in reversed(range(T)):
        prev_h = h[:, t - 1, :] if t > 0 else h0
        da = (dh[:, t, :] + dprev) * (1 - prev_h ** 2)
        dx[:, t, :] = da.dot(Wx.T)
        dWx += x[:, t, :].T.dot(da)
        dWh += prev_h.T.dot(da)
        db += da.sum(axis=0)
        dprev = da.dot(Wh.T)
    return dx, dprev, dWx, dWh, db
