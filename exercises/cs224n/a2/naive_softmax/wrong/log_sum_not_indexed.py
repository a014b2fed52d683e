import numpy as np

from utils.utils import softmax


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    y_hat = softmax(outsideVectors @ centerWordVec)
    loss = -np.sum(np.log(y_hat))  # the outside word's term only is wanted
    delta = y_hat.copy()
    delta[outsideWordIdx] -= 1
    gradCenterVec = outsideVectors.T @ delta
    gradOutsideVecs = np.outer(delta, centerWordVec)
    return loss, gradCenterVec, gradOutsideVecs
