import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    scores -= scores.max(axis=1, keepdims=True)
    probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    loss = -np.log(probs[np.arange(N), y]).mean()
    loss += 0.5 * reg * np.sum(W * W)  # the winter 2016 convention, not reg * np.sum(W * W)

    dscores = probs.copy()
    dscores[np.arange(N), y] -= 1
    dscores /= N
    dW = X.T @ dscores + reg * W
    return loss, dW
