import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    scores -= np.max(scores, axis=1, keepdims=True)
    probs = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)
    loss = -np.mean(np.log(probs[np.arange(N), y])) + 0.5 * reg * np.sum(W * W)  # the winter 2016 convention

    dscores = probs.copy()
    dscores[np.arange(N), y] -= 1
    dW = X.T @ dscores / N + reg * W
    return loss, dW
