import numpy as np


def two_layer_net(X, y, W1, b1, W2, b2, reg):
    N = X.shape[0]
    h = np.maximum(0, X.dot(W1) + b1)
    scores = h.dot(W2) + b2
    scores -= scores.max(axis=1, keepdims=True)
    probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    loss = -np.log(probs[np.arange(N), y]).mean() + 0.5 * reg * (np.sum(W1 * W1) + np.sum(W2 * W2))
    dscores = probs.copy()
    dscores[np.arange(N), y] -= 1
    dW2 = (h.T.dot(dscores) + reg * W2) / N
    db2 = dscores.sum(axis=0) / N
    dh = dscores.dot(W2.T)
    dh[h <= 0] = 0
    dW1 = (X.T.dot(dh) + reg * W1) / N
    db1 = dh.sum(axis=0) / N
    return loss, dW1, db1, dW2, db2
