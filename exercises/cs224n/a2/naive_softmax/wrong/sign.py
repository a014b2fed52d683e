import numpy as np

from utils.utils import softmax


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    y_hat = softmax(outsideVectors @ centerWordVec)
    loss = -np.log(y_hat[outsideWordIdx])
    y = np.zeros_like(y_hat)
    y[outsideWordIdx] = 1
    delta = y - y_hat  # the log-likelihood's gradient, not the loss's
    gradCenterVec = outsideVectors.T @ delta
    gradOutsideVecs = np.outer(delta, centerWordVec)
    return loss, gradCenterVec, gradOutsideVecs
