import numpy as np


def max_pool_forward_naive(x, pool_param):
    ph, pw, s = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    N, C, H, W = x.shape
    out = np.zeros((N, C, 1 + (H - ph) // s, 1 + (W - pw) // s))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.max(x[:, :, i * s:i * s + ph, j * s:j * s + pw], axis=(2, 3))
    return out, (x, pool_param)


def max_pool_backward_naive(dout, cache):
    x, pool_param = cache
    ph, pw, s = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    dx = np.zeros_like(x)
    for i in range(dout.shape[2]):
        for j in range(dout.shape[3]):
            window = x[:, :, i * s:i * s + ph, j * s:j * s + pw]
            mask = window == np.max(window, axis=(2, 3), keepdims=True)
            dx[:, :, i * s:i * s + ph, j * s:j * s + pw] += mask * dout[:, :, i, j][:, :, None, None]
    return dx
