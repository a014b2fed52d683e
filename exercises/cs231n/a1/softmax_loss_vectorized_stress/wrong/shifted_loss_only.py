import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    shifted = scores - np.max(scores, axis=1, keepdims=True)
    loss = np.mean(np.log(np.sum(np.exp(shifted), axis=1)) - shifted[np.arange(N), y]) + reg * np.sum(W * W)

    probs = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)  # the gradient's softmax unshifted
    probs[np.arange(N), y] -= 1
    dW = X.T @ probs / N + 2 * reg * W
    return loss, dW
