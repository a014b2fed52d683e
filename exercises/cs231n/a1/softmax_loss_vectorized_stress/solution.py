import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    scores = X @ W  # (N, C), entries of several hundred to a few thousand here
    shifted = scores - np.max(scores, axis=1, keepdims=True)  # each row's own maximum: exp(shifted) <= 1
    # log softmax, not log(p): a probability of exp(-150) is a normal float64, but 0 in float32
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    loss = -np.mean(log_probs[np.arange(N), y]) + reg * np.sum(W * W)

    dscores = np.exp(log_probs)  # P = softmax(scores)
    dscores[np.arange(N), y] -= 1  # P - Y
    dW = X.T @ dscores / N + 2 * reg * W
    return loss, dW
