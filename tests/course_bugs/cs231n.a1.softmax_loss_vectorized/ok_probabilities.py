import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    num_train = X.shape[0]
    f = X.dot(W)
    f -= f.max(axis=1)[:, np.newaxis]
    e = np.exp(f)
    p = e / e.sum(axis=1)[:, np.newaxis]
    loss = -np.sum(np.log(p[np.arange(num_train), y])) / num_train + reg * np.sum(W * W)
    y_onehot = np.zeros_like(p)
    y_onehot[np.arange(num_train), y] = 1
    dW = X.T.dot(p - y_onehot) / num_train + 2 * reg * W
    return loss, dW
