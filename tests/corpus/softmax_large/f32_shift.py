import numpy as np


def softmax_large(z, y):
    z = z.astype(np.float32)
    N = z.shape[0]
    shifted = z - z.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    dz = np.exp(log_p)
    dz[np.arange(N), y] -= 1
    return -log_p[np.arange(N), y].mean(), dz / np.float32(N)
