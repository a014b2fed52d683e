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
    dc = dnext_c + dnext_h * o * (1.0 - tc * tc)
    di = dc * g
    df = dc * prev_c
    do = dnext_h * tc
    dg = dc * i
    da = np.concatenate(
        [di * i * (1.0 - i), df * f * (1.0 - f), do * o * (1.0 - o), dg * (1.0 - g * g)], axis=1
    )
    dprev_c = dc * f
    return da @ Wx.T, da @ Wh.T, dprev_c, x.T @ da, prev_h.T @ da, da.sum(axis=0)


def lstm_forward(x, h0, Wx, Wh, b):
    N, T, _ = x.shape
    h = np.zeros((N, T, h0.shape[1]))
    prev_h, prev_c = h0, np.zeros_like(h0)
    steps = []
    for t in range(T):
        prev_h, prev_c, step = lstm_step_forward(x[:, t, :], prev_h, prev_c, Wx, Wh, b)
        h[:, t, :] = prev_h
        steps.append(step)
    return h, steps


def lstm_backward(dh, cache):
    steps = cache
    N, T, H = dh.shape
    dx = np.zeros((N, T, steps[0][0].shape[1]))
    dWx = np.zeros_like(steps[0][3])
    dWh = np.zeros_like(steps[0][4])
    db = np.zeros(4 * H)
    dprev_h = np.zeros((N, H))
    dprev_c = np.zeros((N, H))
    for t in reversed(range(T)):
        grads = lstm_step_backward(dh[:, t, :] + dprev_h, np.zeros_like(dprev_c), steps[t])
        dx[:, t, :], dprev_h, dprev_c, dWx_t, dWh_t, db_t = grads
        dWx += dWx_t
        dWh += dWh_t
        db += db_t
    return dx, dprev_h, dWx, dWh, db
