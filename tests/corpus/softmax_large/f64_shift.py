import numpy as np


def softmax_large(z, y):
    N = z.shape[0]
    shifted = z - np.max(z, axis=1, keepdims=True)
    e = np.exp(shifted)
    p = e / np.sum(e, axis=1, keepdims=True)
    loss = np.mean(-np.log(p[np.arange(N), y]))
    dz = p
    dz[np.arange(N), y] -= 1
    return loss, dz / N
