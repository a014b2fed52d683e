import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    W, X = W.astype(np.float32), X.astype(np.float32)
    scores = X @ W
    shifted = scores - scores.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_probs[np.arange(N), y].mean() + reg * np.sum(W * W)

    dscores = np.exp(log_probs)
    dscores[np.arange(N), y] -= 1.0
    dscores /= N
    dW = X.T @ dscores + 2 * reg * W
    return loss, dW
