import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W  # (N, C), entries of several hundred to a few thousand here
    scores -= np.max(scores, axis=1, keepdims=True)  # each row's own maximum: exp(scores) <= 1
    exp_scores = np.exp(scores)
    probs = exp_scores / np.sum(exp_scores, axis=1, keepdims=True)  # P = softmax(scores)
    loss = -np.mean(np.log(probs[np.arange(N), y])) + reg * np.sum(W * W)

    dscores = probs.copy()
    dscores[np.arange(N), y] -= 1  # P - Y
    dW = X.T @ dscores / N + 2 * reg * W
    return loss, dW
