import numpy as np


def svm_loss_naive(W, X, y, reg):
    dW = np.zeros(W.shape)
    num_classes = W.shape[1]
    num_train = X.shape[0]
    loss = 0.0
    for i in range(num_train):
        scores = X[i].dot(W)
        count = 0
        for j in range(num_classes):
            if j == y[i]:
                continue
            margin = scores[j] - scores[y[i]] + 1
            if margin > 0:
                loss += margin
                dW[:, j] += X[i]
                count += 1
        dW[:, y[i]] -= count * X[i]
    loss = loss / num_train + reg * np.sum(W * W)
    dW = dW / num_train + 2 * reg * W
    return loss, dW
