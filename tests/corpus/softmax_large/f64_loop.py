import numpy as np


def softmax_large(z, y):
    # one row at a time, as a naive CS231n loop would
    N, C = z.shape
    loss = 0.0
    dz = np.zeros_like(z)
    for i in range(N):
        scores = z[i] - z[i].max()
        total = np.sum(np.exp(scores))
        loss += -scores[y[i]] + np.log(total)
        for k in range(C):
            dz[i, k] = np.exp(scores[k]) / total - (k == y[i])
    return loss / N, dz / N
