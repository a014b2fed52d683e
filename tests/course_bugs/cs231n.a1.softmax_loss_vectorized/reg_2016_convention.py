import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    num_train = X.shape[0]
    f = X.dot(W)
    f -= np.max(f, axis=1, keepdims=True)
    p = np.exp(f) / np.sum(np.exp(f), axis=1, keepdims=True)
    loss = np.sum(-np.log(p[np.arange(num_train), y])) / num_train
    loss += 0.5 * reg * np.sum(W * W)
    ind = np.zeros_like(p)
    ind[np.arange(num_train), y] = 1
    dW = X.T.dot(p - ind) / num_train + reg * W
    return loss, dW
