import numpy as np


def two_layer_net(X, y, W1, b1, W2, b2, reg):
    N = X.shape[0]
    z1 = X @ W1 + b1
    h = np.maximum(z1, 0)
    scores = h @ W2 + b2

    shifted = scores - scores.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    data_loss = -log_probs[np.arange(N), y].mean()
    loss = data_loss + 0.5 * reg * (np.sum(W1 * W1) + np.sum(W2 * W2))

    dscores = np.exp(log_probs)
    dscores[np.arange(N), y] -= 1
    dscores /= N
    dW2 = h.T @ dscores + 2 * reg * W2
    db2 = dscores.sum(axis=0)
    dh = dscores @ W2.T
    dh[z1 <= 0] = 0
    dW1 = X.T @ dh + 2 * reg * W1
    db1 = dh.sum(axis=0)
    return loss, dW1, db1, dW2, db2
