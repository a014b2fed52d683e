import numpy as np


def svm_loss_vectorized(W, X, y, reg):
    n = X.shape[0]
    s = X.dot(W)
    m = np.maximum(0, s - s[np.arange(n), y][:, None] + 1)
    m[np.arange(n), y] = 0
    loss = m.sum() / n + reg * (W ** 2).sum()
    ind = (m > 0) * 1.0
    onehot = np.eye(W.shape[1])[y]
    dW = X.T.dot(ind - onehot * ind.sum(axis=1, keepdims=True)) / n + 2 * reg * W
    return loss, dW
