import numpy as np


def conv_forward_naive(x, w, b, conv_param):
    S, P = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    HO = 1 + (H + 2 * P - HH) // S
    WO = 1 + (W + 2 * P - WW) // S
    xp = np.pad(x, ((0, 0), (0, 0), (P, P), (P, P)))
    out = np.zeros((N, F, HO, WO))
    for i in range(HO):
        for j in range(WO):
            window = xp[:, :, i * S:i * S + HH, j * S:j * S + WW]
            out[:, :, i, j] = window.reshape(N, -1) @ w.reshape(F, -1).T + b
    return out, (x, w, conv_param)


def conv_backward_naive(dout, cache):
    x, w, conv_param = cache
    S, P = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (P, P), (P, P)))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    for i in range(dout.shape[2]):
        for j in range(dout.shape[3]):
            window = xp[:, :, i * S:i * S + HH, j * S:j * S + WW]
            g = dout[:, :, i, j]
            dw += (g.T @ window.reshape(N, -1)).reshape(w.shape)
            dxp[:, :, i * S:i * S + HH, j * S:j * S + WW] = (g @ w.reshape(F, -1)).reshape(window.shape)
    dx = dxp[:, :, P:P + H, P:P + W]
    db = dout.sum(axis=(0, 2, 3))
    return dx, dw, db
