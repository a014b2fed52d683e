import numpy as np


def conv_forward_naive(x, w, b, conv_param):
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, C, HH, WW = w.shape
    H_out = int(1 + (H + 2 * pad - HH) / stride)
    W_out = int(1 + (W + 2 * pad - WW) / stride)
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), "constant")
    out = np.zeros((N, F, H_out, W_out))
    for f in range(F):
        for i in range(H_out):
            for j in range(W_out):
                window = x_pad[:, :, i * stride:i * stride + HH, j * stride:j * stride + HH]  # HH for WW
                out[:, f, i, j] = np.sum(window * w[f], axis=(1, 2, 3)) + b[f]
    cache = (x, w, b, conv_param)
    return out, cache


def conv_backward_naive(dout, cache):
    x, w, b, conv_param = cache
    stride, pad = conv_param["stride"], conv_param["pad"]
    F, C, HH, WW = w.shape
    N, F, H_out, W_out = dout.shape
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), "constant")
    dx_pad = np.zeros_like(x_pad)
    dw = np.zeros_like(w)
    for f in range(F):
        for i in range(H_out):
            for j in range(W_out):
                window = x_pad[:, :, i * stride:i * stride + HH, j * stride:j * stride + WW]
                g = dout[:, f, i, j].reshape(-1, 1, 1, 1)
                dw[f] += np.sum(window * g, axis=0)
                dx_pad[:, :, i * stride:i * stride + HH, j * stride:j * stride + WW] += w[f] * g
    dx = dx_pad[:, :, pad:pad + x.shape[2], pad:pad + x.shape[3]]
    db = np.sum(dout, axis=(0, 2, 3))
    return dx, dw, db
