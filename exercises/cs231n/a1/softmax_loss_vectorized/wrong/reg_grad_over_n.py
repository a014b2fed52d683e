import numpy as np


def softmax_loss_vectorized(W, X, y, reg):
    num_train = X.shape[0]
    scores = X.dot(W)
    scores -= np.max(scores, axis=1, keepdims=True)
    probs = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)
    loss = -np.sum(np.log(probs[np.arange(num_train), y])) / num_train
    loss += reg * np.sum(W * W)

    dscores = probs
    dscores[np.arange(num_train), y] -= 1
    dW = X.T.dot(dscores)
    dW = (dW + 2 * reg * W) / num_train  # the regularisation's gradient averaged with the data term
    return loss, dW
