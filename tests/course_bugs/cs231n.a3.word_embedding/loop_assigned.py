import numpy as np


def word_embedding_forward(x, W):
    out = W[x]
    cache = (x, W)
    return out, cache


def word_embedding_backward(dout, cache):
    x, W = cache
    dW = np.zeros_like(W)
    N, T = x.shape
    for n in range(N):
        for t in range(T):
            dW[x[n, t]] = dout[n, t]
    return dW
