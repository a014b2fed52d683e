import numpy as np


def temporal_softmax_loss(x, y, mask, verbose=False):
    N = x.shape[0]
    shifted = x - x.max(axis=2, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=2, keepdims=True))
    n, t = np.indices(y.shape)
    loss = -(mask * log_p[n, t, y]).sum() / N
    dx = np.exp(log_p)
    dx[n, t, y] -= 1.0
    dx /= N
    if verbose:
        print("dx:", dx.shape)
    return loss, dx
