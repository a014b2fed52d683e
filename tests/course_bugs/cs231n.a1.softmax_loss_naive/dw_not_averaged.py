from builtins import range
import numpy as np
from random import shuffle
from past.builtins import xrange


def softmax_loss_naive(W, X, y, reg):
    loss = 0.0
    dW = np.zeros_like(W)
    num_classes = W.shape[1]
    num_train = X.shape[0]
    for i in xrange(num_train):
        scores = X[i].dot(W)
        scores -= np.max(scores)
        log_sum = np.log(np.sum(np.exp(scores)))
        loss += log_sum - scores[y[i]]
        for j in range(num_classes):
            p = np.exp(scores[j] - log_sum)
            dW[:, j] += (p - (j == y[i])) * X[i]
    loss /= num_train

    loss += reg * np.sum(W * W)
    dW += 2 * reg * W
    return loss, dW
