def word_embedding_forward(x, W):
    return W[x], (x, W.shape)


def word_embedding_backward(dout, cache):
    x, shape = cache
    dW = dout.sum(axis=1)
    return dW
