import numpy as np


def softmax_loss(x, y):
    shifted = x - np.max(x, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    N = x.shape[0]
    loss = -np.sum(log_probs[np.arange(N), y]) / N
    dx = np.exp(log_probs)
    dx[np.arange(N), y] -= 1

    return loss, dx
