import numpy as np


def svm_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    correct = scores[np.arange(N), y].reshape(-1, 1)
    margins = np.maximum(0, scores - correct + 1)  # margins[i, y_i] = max(0, 1) = 1 stays in
    loss = np.sum(margins) / N + reg * np.sum(W * W)

    mask = (margins > 0).astype(float)
    mask[np.arange(N), y] = -np.sum(mask, axis=1)  # counts the correct class's own margin too
    dW = X.T @ mask / N + 2 * reg * W
    return loss, dW
