import numpy as np


def svm_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    correct = scores[np.arange(N), y][:, np.newaxis]
    margins = np.maximum(0.0, scores - correct + 1.0)
    margins[np.arange(N), y] = 0.0
    loss = margins.sum() / N + reg * np.sum(W * W)

    dscores = (margins > 0).astype(X.dtype)
    dscores[np.arange(N), y] = -dscores.sum(axis=1)
    dscores /= N
    dW = X.T @ dscores + reg * W
    return loss, dW
