import numpy as np


def svm_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W  # (N, C)
    correct = scores[np.arange(N), y][:, np.newaxis]  # (N, 1): each row's correct-class score
    margins = np.maximum(0.0, scores - correct + 1.0)  # delta = 1
    margins[np.arange(N), y] = 0.0  # the correct class is not its own competitor
    loss = margins.sum() / N + reg * np.sum(W * W)

    dscores = (margins > 0).astype(X.dtype)  # +1 for each positive margin's class
    dscores[np.arange(N), y] = -dscores.sum(axis=1)  # -1 per positive margin for the correct class
    dscores /= N  # the 1/N of the average
    dW = X.T @ dscores + 2 * reg * W  # chain rule through X @ W, plus d(reg * sum(W * W)) / dW
    return loss, dW
