import numpy as np


def softmax_large(z, y):
    N = z.shape[0]
    e = np.exp(z)  # no max-shift: inf above 709.78
    p = e / e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(N), y]))
    onehot = np.zeros_like(z)
    onehot[np.arange(N), y] = 1
    return loss, (p - onehot) / N
