import numpy as np


def softmax_large(z, y):
    N = z.shape[0]
    e = np.exp(z)  # no max-shift: exp(710) is inf in float64
    p = e / e.sum(axis=1, keepdims=True)  # inf / inf = nan
    loss = -np.log(p[np.arange(N), y]).mean()
    dz = p.copy()
    dz[np.arange(N), y] -= 1.0
    return loss, dz / N
