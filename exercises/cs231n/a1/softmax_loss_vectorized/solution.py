import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W  # (N, C)
    shifted = scores - scores.max(axis=1, keepdims=True)  # exp(shifted) <= 1: no overflow
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))  # log softmax, (N, C)
    loss = -log_probs[np.arange(N), y].mean() + reg * np.sum(W * W)

    dscores = np.exp(log_probs)  # P = softmax(scores)
    dscores[np.arange(N), y] -= 1.0  # P - Y: one entry per row
    dscores /= N  # the 1/N of the mean
    dW = X.T @ dscores + 2 * reg * W  # chain rule through X @ W, plus d(reg * sum(W * W)) / dW
    return loss, dW
