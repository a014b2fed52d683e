import numpy as np


def max_pool_forward_naive(x, pool_param):
    PH, PW, S = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    N, C, H, W = x.shape
    HO, WO = 1 + (H - PH) // S, 1 + (W - PW) // S
    out = np.zeros((N, C, HO, WO))
    for i in range(HO):
        for j in range(WO):
            out[:, :, i, j] = x[:, :, i * S:i * S + PH, j * S:j * S + PW].max(axis=(2, 3))
    return out, (x, pool_param)


def max_pool_backward_naive(dout, cache):
    x, pool_param = cache
    PH, PW, S = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    N, C, HO, WO = dout.shape
    dx = np.zeros_like(x)
    for n in range(N):
        for c in range(C):
            for i in range(HO):
                for j in range(WO):
                    window = x[n, c, i * S:i * S + PH, j * S:j * S + PW]
                    k, l = np.unravel_index(np.argmax(window), window.shape)
                    dx[n, c, i * S + k, j * S + l] = dout[n, c, i, j]
    return dx
