import numpy as np

from utils.utils import softmax


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    y_hat = softmax(outsideVectors @ centerWordVec)
    loss = -np.log(y_hat[outsideWordIdx])
    # forgot to subtract the one-hot y: uses y_hat, not y_hat - y
    gradCenterVec = outsideVectors.T @ y_hat
    gradOutsideVecs = np.outer(y_hat, centerWordVec)
    return loss, gradCenterVec, gradOutsideVecs
