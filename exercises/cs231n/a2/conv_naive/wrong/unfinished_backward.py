import numpy as np


def conv_forward_naive(x, w, b, conv_param):
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, C, HH, WW = w.shape
    H_out = int(1 + (H + 2 * pad - HH) / stride)
    W_out = int(1 + (W + 2 * pad - WW) / stride)
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((N, F, H_out, W_out))
    for f in range(F):
        for i in range(H_out):
            for j in range(W_out):
                window = x_pad[:, :, i * stride:i * stride + HH, j * stride:j * stride + WW]
                out[:, f, i, j] = np.sum(window * w[f], axis=(1, 2, 3))
    out += b.reshape(1, -1, 1, 1)
    cache = (x, w, b, conv_param)
    return out, cache


def conv_backward_naive(dout, cache):
    db = np.sum(dout, axis=(0, 2, 3))
    x, w, b, conv_param = cache
    dx = np.zeros_like(x)
    dw = np.zeros_like(w)
    # TODO: the loops for dx and dw
    return dx, dw, db
