import numpy as np


def word_embedding_forward(x, W):
    return W[x], (x, W.shape)


def word_embedding_backward(dout, cache):
    x, shape = cache
    dW = np.zeros(shape)
    dW[x] += dout
    return dW
